"""The benchmark's flags as data: one table of definitions, made into a
fresh absl `FlagValues` per parse.

A definition (`FlagDef`) is the flag's tf_cnn_benchmarks name, its value
type (`value_types`), its default, its help, the other names it answers to
(`aliases`, e.g. `--seed` for `--tf_random_seed`) and the destination its
value is read under (`dest`: `args.seed`). Booleans are absl booleans:
`--flag`, `--flag=true|false`, `--noflag`. Checks of one value are its
type's (ranges, choices, a refused choice such as `--data_format=NCHW`);
checks of several flags are the `*_checks` modules'.
"""

import collections

from absl import flags as absl_flags

from variable_mgr.benchmark.flags import value_types as t

# The library's and the models' names, written out so that parsing imports
# neither (tests check that they agree).
STRATEGY_NAMES = ('independent', 'parameter_server', 'replicated',
                  'distributed_replicated', 'collective_all_reduce',
                  'distributed_all_reduce')
MODEL_NAMES = ('trivial', 'lenet', 'resnet20', 'resnet50', 'alexnet', 'vgg16',
               'inception3', 'googlenet', 'resnet101', 'resnet152')
DATA_NAMES = ('imagenet', 'cifar10', 'digits', 'small')
# tf_cnn_benchmarks' data set when a command line names none: synthetic
# images of its shapes unless --data_dir gives files.
DEFAULT_DATA_NAME = 'imagenet'
# The data sets read from files: without --data_dir, synthetic data of
# their shapes, as tf_cnn_benchmarks.
FILE_DATA_NAMES = ('imagenet', 'cifar10')
# Data sets that come with a package and read no directory.
BUNDLED_DATA_NAMES = ('digits',)


def is_synthetic(data_name, data_dir):
  """True when a run of `data_name` and `data_dir` times synthetic data:
  no data set (the library's API), `small`, or a data set read from files
  without `--data_dir`."""
  return data_dir is None and data_name not in BUNDLED_DATA_NAMES
OPTIMIZERS = ('sgd', 'momentum', 'rmsprop', 'adam')
# The help's sections (absl lists each as a module of flags).
MODULE = 'variable_mgr_benchmark'
ALIASES_MODULE = MODULE + ' aliases'


class FlagDef(collections.namedtuple(
    'FlagDef', 'name convert default help aliases dest boolean syntax')):
  """One flag: see the module's docstring. `convert` is a `value_types`
  function; `boolean` makes it an absl boolean."""


def flag(name, convert, default, help_text, aliases=(), dest=None,
         syntax=''):
  return FlagDef(name, convert, default, help_text, tuple(aliases),
                 dest or name, False, syntax)


def boolean(name, default, help_text):
  return FlagDef(name, t.parse_bool, default, help_text, (), name, True, '')


def choice(name, choices, default, help_text, lower=False, refused=None):
  return flag(name, t.one_of(choices, lower, refused), default, help_text,
              syntax='|'.join(choices))


HOROVOD_REFUSED = (
    'Horovod is not part of this benchmark (it needs horovod and MPI); its '
    'all-reduce of every tower of every worker, averaged, is '
    '{flag}=collective_all_reduce (with --launch_local_cluster or '
    '--job_name), which this benchmark runs on TensorFlow\'s collective '
    'ops')
NCHW_REFUSED = (
    'the benchmark\'s models are written NHWC, and tf_cnn_benchmarks refuses '
    'NCHW with --device=cpu; pass {flag}=NHWC (or drop the flag)')


def training_flags(model_names):
  """The model, the strategy and its options, the run's length, outputs."""
  return (
      choice('model', model_names, 'trivial', 'the model to train'),
      choice('variable_update', STRATEGY_NAMES, 'parameter_server',
             'how variables are kept and updated',
             refused={'horovod': HOROVOD_REFUSED}),
      flag('num_gpus', t.int_at_least(1), 1,
           'number of towers (virtual CPU devices with --device=cpu)'),
      # tf_cnn_benchmarks takes CPU and GPU too. None: its default, gpu,
      # where TensorFlow finds a GPU (`run_config.default_device`).
      choice('device', ('cpu', 'gpu'), None, 'the towers\' device type '
             '(default: gpu; cpu where TensorFlow finds no GPU, as the '
             'header says)', lower=True),
      choice('local_parameter_device', ('cpu', 'gpu'), 'cpu',
             'where parameter_server keeps the variables', lower=True),
      boolean('staged_vars', False,
              'read variables through staging areas (parameter_server only)'),
      boolean('use_nccl', False,
              'all-reduce with NCCL (replicated on GPUs only)'),
      flag('all_reduce_spec', t.text, None,
           'replicated: the all-reduce algorithm, e.g. xring, xring#2, '
           'pscpu:32k:xring, rechd, hcopy, nccl (default: the copy)'),
      flag('gradient_repacking', t.int_at_least(0), 0,
           'replicated: all-reduce this many packs of the concatenated '
           'gradients (0: off)'),
      flag('agg_small_grads_max_bytes', t.int_at_least(0), 0,
           'replicated: concatenate gradients of at most this many bytes '
           'before the all-reduce (0: off)'),
      flag('agg_small_grads_max_group', t.int_at_least(1), 10,
           'replicated: at most this many gradients a group'),
      choice('variable_consistency', ('strong', 'relaxed'), 'strong',
             'replicated: relaxed applies each step the all-reduced '
             'gradient of the step before, so the all-reduce overlaps the '
             'next step'),
      boolean('hierarchical_copy', False,
              'replicated: all-reduce with the hierarchical copy (the same '
              'as --all_reduce_spec=hcopy); needs --num_gpus of 2 or more'),
      boolean('compact_gradient_transfer', True,
              'replicated with --use_fp16: the gradients travel as float16 '
              '(--nocompact_gradient_transfer: as float32)'),
      boolean('measure_traffic', False,
              'after the timed steps, run one more and print the bytes each '
              'device sent and received beside the ring lower bound'),
      boolean('use_fp16', False,
              'towers compute in float16 on float32 variables, with a loss '
              'scale'),
      flag('fp16_loss_scale', t.positive_float, None,
           '--use_fp16: the fixed loss scale, or the first one with '
           '--fp16_enable_auto_loss_scale (default: 128)'),
      boolean('fp16_enable_auto_loss_scale', False,
              '--use_fp16: halve the loss scale and skip the step when a '
              'gradient holds an inf or NaN on any tower (of any worker; '
              'with --cross_replica_sync=false a worker skips its own '
              'step); double it after --fp16_inc_loss_scale_every_n good '
              'steps'),
      flag('fp16_inc_loss_scale_every_n', t.int_at_least(1), 1000,
           '--fp16_enable_auto_loss_scale: good steps before the loss scale '
           'doubles'),
      flag('backward_passes_per_step', t.int_at_least(1), 1,
           'add this many micro-batches\' gradients on each tower before '
           'they are combined and applied once'),
      flag('batch_size', t.int_at_least(1), None,
           'batch size per tower (default: the model\'s, 32)'),
      flag('num_batches', t.int_at_least(1), None,
           'timed batches (default: 100, as tf_cnn_benchmarks; 10 a run with '
           '--compare)'),
      flag('num_epochs', t.positive_float, None,
           'train this many epochs of the training split instead of '
           '--num_batches: ceil(epochs x examples / global batch) timed '
           'batches, as tf_cnn_benchmarks counts them'),
      flag('num_warmup_batches', t.int_at_least(0), None,
           'untimed batches before timing (default: 10, as tf_cnn_benchmarks; '
           '2 with --compare)'),
      flag('display_every', t.int_at_least(1), 10,
           'print a progress line every this many steps'),
      flag('weight_decay', t.non_negative_float, None,
           'L2 factor on weights (default: the model\'s)'),
      flag('tf_random_seed', t.integer, 1234,
           'graph-level random seed of initial values and synthetic data '
           '(also --seed)', aliases=('seed',), dest='seed'),
      boolean('use_resource_vars', None,
              'true: resource variables; false: ref variables (default: '
              'TensorFlow\'s, ref in 1.15, resource in 2.x)'),
      flag('train_dir', t.text, None,
           'restore the latest checkpoint here at start, save at the end (a '
           'directory; created if missing, its parent must exist)'),
      flag('summary_dir', t.text, None,
           'write a TensorBoard scalar summary of the loss here (a '
           'directory; created if missing, its parent must exist)'),
      flag('trace_file', t.text, None,
           'write a Chrome trace (chrome://tracing) of one step to this file '
           '(its directory must exist); on a cluster each worker writes its '
           'own, the task inserted before the extension: trace.json -> '
           'trace.worker0.json, trace.worker1.json, ...'),
      flag('output', t.text, None,
           'write the results as JSON to this file (its directory must '
           'exist)'),
  )


COMPARE_FLAGS = (
    boolean('compare', False,
            'sweep strategies x tower counts; write a Markdown table and a '
            'PNG chart into --compare_dir'),
    flag('compare_dir', t.text, 'benchmark_compare',
         'output directory of --compare (created if missing, its parent '
         'must exist)'),
    flag('compare_strategies', t.strategy_list(STRATEGY_NAMES),
         ['independent', 'parameter_server', 'replicated',
          'distributed_replicated'],
         'comma-separated strategies for --compare (default: every strategy '
         'that runs on one machine)'),
    flag('compare_towers', t.tower_counts, [1, 2, 4],
         'comma-separated tower counts for --compare'),
    flag('compare_options', t.option_set_list, None,
         'comma-separated option sets for --compare, each plain, fp16, '
         'fp16_auto, bpps<N> (--backward_passes_per_step=N) or relaxed, '
         'several joined by +, e.g. plain,fp16,bpps4,relaxed (default: the '
         'training options of the other flags)'),
)

OPTIMIZER_FLAGS = (
    choice('optimizer', OPTIMIZERS, 'sgd', 'sgd, momentum, rmsprop or adam'),
    flag('init_learning_rate', t.positive_float, None,
         'the initial learning rate (default: the model\'s; for resnet50, '
         'resnet101 and resnet152 tf_cnn_benchmarks\' schedule, scaled with '
         'the global batch) (also --learning_rate)',
         aliases=('learning_rate',), dest='learning_rate'),
    flag('piecewise_learning_rate_schedule', t.piecewise_schedule, None,
         '"lr0;epoch1;lr1;...;epochN;lrN": lr0 until epoch1 (whole epochs '
         'from 0, increasing), then lr1, ...'),
    flag('num_epochs_per_decay', t.non_negative_float, 0.0,
         'with --learning_rate_decay_factor: multiply the rate by the factor '
         'every this many epochs (staircase) (0: off)'),
    flag('learning_rate_decay_factor', t.decay_factor, 0.0,
         'the factor of --num_epochs_per_decay, above 0 and below 1 (0: '
         'off)'),
    flag('num_learning_rate_warmup_epochs', t.non_negative_float, 0.0,
         'raise the rate linearly from 0 to the initial one over this many '
         'epochs (0: off)'),
    flag('minimum_learning_rate', t.non_negative_float, 0.0,
         'the decay never takes the rate below this'),
    flag('resnet_base_lr', t.positive_float, None,
         'resnet50, resnet101, resnet152: the base rate of the default '
         'schedule at a global batch of 256 (default: 0.128)'),
    flag('momentum', t.positive_float, 0.9,
         '--optimizer=momentum: the momentum'),
    flag('rmsprop_decay', t.fraction, 0.9,
         '--optimizer=rmsprop: the decay of the mean square'),
    flag('rmsprop_momentum', t.non_negative_float, 0.9,
         '--optimizer=rmsprop: the momentum'),
    flag('rmsprop_epsilon', t.positive_float, 1.0,
         '--optimizer=rmsprop: the epsilon'),
    flag('adam_beta1', t.fraction, 0.9, '--optimizer=adam: beta1'),
    flag('adam_beta2', t.fraction, 0.999, '--optimizer=adam: beta2'),
    flag('adam_epsilon', t.positive_float, 1e-8, '--optimizer=adam: the '
         'epsilon'),
    flag('gradient_clip', t.positive_float, None,
         'clip every gradient to [-c, c] (tf.clip_by_value, element by '
         'element) after the towers\' gradients are combined, before they '
         'are applied (default: off)'),
)

DATA_FLAGS = (
    choice('data_name', DATA_NAMES, None,
           'the data set: imagenet or cifar10 (its files in --data_dir; '
           'without --data_dir, synthetic images of its shapes, as '
           'tf_cnn_benchmarks), digits (scikit-learn\'s bundled 8x8 digits, '
           'no download) or small (synthetic images of the benchmark\'s own '
           'small shapes: trivial and lenet 28x28x1 into 10 classes) '
           '(default: imagenet, synthetic without --data_dir)'),
    flag('data_dir', t.text, None, 'the directory of --data_name\'s files'),
    choice('data_format', ('NHWC', 'NCHW'), 'NHWC', 'the images\' layout '
           '(NHWC only: the models are written NHWC)',
           refused={'NCHW': NCHW_REFUSED}),
    boolean('distortions', False,
            'distort the training images (crops, flips, colour) as '
            'tf_cnn_benchmarks does'),
    boolean('eval', False,
            'evaluate the latest checkpoint of --train_dir on the eval split '
            'instead of training; prints top-1 and top-5 accuracy'),
    flag('num_eval_batches', t.int_at_least(1), None,
         '--eval: batches to evaluate (default: --num_batches; the '
         'validation split is read once at most)'),
    flag('eval_during_training_every_n_steps', t.int_at_least(1), None,
         'evaluate the training variables every this many steps'),
    boolean('forward_only', False,
            'run the forward pass only: no gradients, no updates'),
    boolean('print_training_accuracy', False,
            'add the batch\'s top-1 and top-5 accuracy to the step lines'),
    flag('num_intra_threads', t.int_at_least(0), None,
         'threads of one op (default: TensorFlow\'s)'),
    flag('num_inter_threads', t.int_at_least(0), 0,
         'ops run at once (0: TensorFlow\'s choice on one machine, one more '
         'than the task\'s processors on a cluster task)'),
    flag('save_model_secs', t.int_at_least(0), 0,
         'also save a checkpoint into --train_dir every this many seconds '
         '(0: off)'),
    flag('save_model_steps', t.int_at_least(0), 0,
         'also save a checkpoint into --train_dir every this many steps (on '
         'one machine timed steps, as tf_cnn_benchmarks counts; a cluster\'s '
         'chief counts warm-up steps too; 0: only at the end)'),
    flag('max_ckpts_to_keep', t.int_at_least(1), 5,
         'checkpoints kept in --train_dir'),
    flag('save_summaries_steps', t.int_at_least(0), 0,
         'write summaries into --summary_dir every this many steps (0: every '
         'step)'),
    flag('summary_verbosity', t.int_at_least(0), 0,
         '0: the loss only; 1: and the learning rate; 2: and every '
         'gradient\'s norm; 3: and histograms of the variables'),
)

CLUSTER_FLAGS = (
    choice('job_name', ('ps', 'worker', 'controller'), None,
           'this task\'s job; with --task_index, --ps_hosts, --worker_hosts. '
           'Without it, TF_CONFIG is read when set. controller: '
           'distributed_all_reduce\'s task that runs the one graph'),
    flag('task_index', t.int_at_least(0), 0,
         'this task\'s index in its job'),
    flag('ps_hosts', t.text, '', 'comma-separated host:port of the PS tasks'),
    flag('worker_hosts', t.text, '',
         'comma-separated host:port of the workers; worker 0 is the chief'),
    flag('controller_host', t.text, None,
         'distributed_all_reduce: host:port of the controller '
         '(--job_name=controller), which builds one graph over every worker '
         'and runs it on worker 0; every task of such a cluster needs it'),
    boolean('cross_replica_sync', True,
            'synchronous steps across workers (default); false: '
            'asynchronous parameter_server'),
    flag('op_timeout_secs', t.positive_float, 60.0,
         'deadline of every session call; when a task dies the others exit '
         'within about this long'),
    flag('startup_timeout_secs', t.positive_float, 300.0,
         'how long a task waits for the others to come up and for the chief '
         'to initialise'),
    flag('gradient_bucket_bytes', t.int_at_least(0), None,
         'collective_all_reduce, distributed_all_reduce, parameter_server '
         'on a cluster: the largest bucket of gradients one all-reduce (or '
         'push to a PS task) carries across the workers, filled in the '
         'order the backward pass produces them (default: 256 KiB for the '
         'all-reduces, 0 for the pushes; 0: one a gradient)'),
    flag('variable_partition_min_bytes', t.int_at_least(0), 0,
         'distributed PS strategies: split every variable of more than this '
         'many bytes into at most one slice a PS task, none under this size '
         '(0: off)'),
    boolean('launch_local_cluster', False,
            'start --num_ps PS tasks and --num_workers workers as processes '
            'on 127.0.0.1 and report the cluster\'s total images/sec'),
    flag('num_ps', t.int_at_least(1), 1, 'PS tasks of --launch_local_cluster'),
    flag('num_workers', t.int_at_least(1), 2,
         'workers of --launch_local_cluster'),
    flag('network_rate', t.link_rate, None,
         '--launch_local_cluster: run every task in its own network '
         'namespace (its own address; Linux and root only), each link '
         'shaped to this speed both ways, e.g. 200mbit or 1gbit (default: '
         'loopback, unshaped)'),
)


def sections(model_names=MODEL_NAMES):
  """[(help section, definitions)] of every flag of the benchmark."""
  return [(MODULE + ': training', training_flags(model_names)),
          (MODULE + ': optimizer and learning rate', OPTIMIZER_FLAGS),
          (MODULE + ': data, evaluation, checkpoints', DATA_FLAGS),
          (MODULE + ': --compare', COMPARE_FLAGS),
          (MODULE + ': cluster', CLUSTER_FLAGS)]


def definitions(model_names=MODEL_NAMES):
  """Every FlagDef of the benchmark, in the help's order."""
  return [d for _, defs in sections(model_names) for d in defs]


def define(flag_values, model_names=MODEL_NAMES, aliases=True):
  """Defines the benchmark's flags in the absl FlagValues `flag_values`,
  with their aliases (under ALIASES_MODULE, a help section of their own)
  unless `aliases` is false."""
  serializer = t.TextSerializer()
  for module, defs in sections(model_names):
    for d in defs:
      absl_flags.DEFINE_flag(
          absl_flags.Flag(t.ValueParser(d.convert, 'bool' if d.boolean
                                        else 'value', d.syntax),
                          serializer, d.name, d.default, d.help,
                          boolean=d.boolean),
          flag_values, module_name=module)
      for alias in d.aliases if aliases else ():
        absl_flags.DEFINE_alias(alias, d.name, flag_values=flag_values,
                                module_name=ALIASES_MODULE)
