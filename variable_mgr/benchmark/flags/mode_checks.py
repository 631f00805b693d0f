"""Cross-checks of the launch mode: one machine, the `--compare` sweep, a
cluster task (the task flags or TF_CONFIG) or `--launch_local_cluster`,
against the strategy and the flags each mode reads (imports no
TensorFlow).
"""

from variable_mgr.benchmark.flags.as_typed import flag_list
from variable_mgr.benchmark.flags.as_typed import given
from variable_mgr.benchmark.flags.as_typed import value
from variable_mgr.benchmark.flags.value_types import OPTION_FLAGS
from variable_mgr.benchmark.flags.value_types import option_set_tokens
from variable_mgr.benchmark.flags.value_types import UsageError

# Strategies that run across a cluster, and the one that runs nowhere else.
CLUSTER_STRATEGIES = ('parameter_server', 'distributed_replicated',
                      'collective_all_reduce', 'distributed_all_reduce')
CLUSTER_ONLY_STRATEGIES = ('collective_all_reduce', 'distributed_all_reduce')
# The flags that say which task of a cluster this process is.
TASK_FLAGS = ('job_name', 'task_index', 'ps_hosts', 'worker_hosts',
              'controller_host')
# The strategy whose cluster is a controller and workers that serve.
CONTROLLER_STRATEGY = 'distributed_all_reduce'
# Flags a cluster run reads and a run on one machine would ignore.
CLUSTER_ONLY_FLAGS = ('cross_replica_sync', 'op_timeout_secs',
                      'startup_timeout_secs', 'num_ps', 'num_workers')
# Flags a run on one machine reads and a cluster run would ignore
# (--trace_file is read by both: each worker writes a trace of its own).
LOCAL_ONLY_FLAGS = ('summary_dir', 'measure_traffic')
COMPARE_FLAGS = ('compare_dir', 'compare_strategies', 'compare_towers',
                 'compare_options')


def check(args, typed, environ, command):
  """Refuses flags that the launch mode of `args` cannot run or would
  ignore; `command` is 'benchmark' (parse_args) or 'task'
  (parse_task_args: a task or a launcher).

  Returns:
    True when the run is a cluster (a task or --launch_local_cluster).
  """
  tf_config = bool(environ.get('TF_CONFIG', '').strip())
  task_flags = [f for f in TASK_FLAGS if f in typed]
  launch = args.launch_local_cluster
  if tf_config and task_flags:
    raise UsageError(
        'TF_CONFIG is set and %s given too: a task is described by the '
        'flags or by TF_CONFIG, not both; unset TF_CONFIG or drop %s' %
        (flag_list(task_flags, args), flag_list(task_flags, args)))
  if tf_config and launch:
    raise UsageError(
        '--launch_local_cluster with TF_CONFIG set: the launcher picks every '
        'task\'s address itself; unset TF_CONFIG, or drop '
        '--launch_local_cluster to run the task TF_CONFIG describes')
  if 'task_index' in typed and not args.job_name and not launch:
    raise UsageError(
        '%s without --job_name: say which job the task is in, e.g. '
        '--job_name=worker %s --ps_hosts=... --worker_hosts=...' %
        (value(args, 'task_index'), value(args, 'task_index')))
  cluster = launch or bool(task_flags) or tf_config or command == 'task'
  mode = None
  if cluster:
    mode = ('--launch_local_cluster' if launch else
            'a cluster task (TF_CONFIG)' if tf_config else
            'a cluster task (%s)' % (value(args, 'job_name') if args.job_name
                                     else flag_list(task_flags or
                                                    ['job_name'])))
  if args.compare:
    _check_compare(args, typed, cluster and (
        '--launch_local_cluster' if launch else 'TF_CONFIG set'
        if tf_config else flag_list(task_flags, args)))
  else:
    compare_flags = [f for f in COMPARE_FLAGS if f in typed]
    if compare_flags:
      raise UsageError('%s without --compare: %s applies to --compare only; '
                       'add --compare or drop %s' % (
                           value(args, compare_flags[0]),
                           '--' + compare_flags[0],
                           flag_list(compare_flags, args)))
  _check_strategy(args, typed, cluster, mode)
  _check_buckets(args, typed, cluster)
  _check_controller(args, typed, tf_config, launch)
  if cluster:
    ignored = [f for f in LOCAL_ONLY_FLAGS if f in typed and getattr(args, f)]
    if ignored:
      raise UsageError(
          '%s: a cluster run does not write or measure this (only a run on '
          'one machine does); drop %s' % (
              value(args, ignored[0]), flag_list(ignored, args)))
  else:
    ignored = [f for f in CLUSTER_ONLY_FLAGS if f in typed]
    if ignored:
      raise UsageError(
          '%s: applies to cluster runs only (--launch_local_cluster, '
          '--job_name or TF_CONFIG); drop %s or add --launch_local_cluster' %
          (value(args, ignored[0]), flag_list(ignored, args)))
  return bool(cluster)


def check_network_rate(args):
  """Refuses --network_rate without --launch_local_cluster."""
  if args.network_rate is not None and not args.launch_local_cluster:
    raise UsageError(
        '%s without --launch_local_cluster: the namespace network is made '
        'by the launcher of a cluster on this machine; add '
        '--launch_local_cluster or drop --network_rate' %
        given(args, 'network_rate'))


def _check_compare(args, typed, cluster):
  """The --compare sweep; `cluster`: how the flags ask for a cluster, or
  a false value."""
  if cluster:
    raise UsageError(
        '--compare with %s: the sweep runs every configuration in this '
        'process, not as a cluster; %s' % (
            cluster, 'unset TF_CONFIG or drop --compare' if cluster ==
            'TF_CONFIG set' else 'drop --compare or ' + cluster))
  ignored = [f for f in ('train_dir', 'summary_dir', 'trace_file', 'output')
             if getattr(args, f)]
  if ignored:
    raise UsageError(
        '--compare runs many configurations and writes its results into '
        '--compare_dir: drop %s, or run one configuration without --compare'
        % flag_list(ignored, args))
  cluster_only = [s for s in args.compare_strategies
                  if s in CLUSTER_ONLY_STRATEGIES]
  if cluster_only:
    raise UsageError(
        '%s: %s runs across a cluster only, and --compare runs on one '
        'machine; drop it from --compare_strategies (run it with '
        '--launch_local_cluster --variable_update=%s)' % (
            value(args, 'compare_strategies'), ', '.join(cluster_only),
            cluster_only[0]))
  both = [f for f in OPTION_FLAGS if f in typed]
  if args.compare_options and both:
    raise UsageError(
        '%s with %s: each option set of --compare_options says which '
        'training options its runs have; drop %s and name the options in '
        'the sets (e.g. --compare_options=plain,fp16,bpps4,relaxed)' % (
            value(args, both[0]), value(args, 'compare_options'),
            flag_list(both, args)))
  for flag, token in (('fp16_loss_scale', 'fp16'),
                      ('fp16_inc_loss_scale_every_n', 'fp16_auto')):
    if args.compare_options and flag in typed and not any(
        t.startswith(token) and (token == 'fp16' or t == token)
        for n in args.compare_options for t in option_set_tokens(n)):
      raise UsageError(
          '%s with %s: no option set has %s, so no run would use it; add a '
          'set with %s to --compare_options or drop --%s' % (
              value(args, flag), value(args, 'compare_options'), token,
              token, flag))


def _check_strategy(args, typed, cluster, mode):
  if cluster and args.variable_update not in CLUSTER_STRATEGIES:
    choices = '--variable_update=%s' % ', '.join(CLUSTER_STRATEGIES[:-1]) + (
        ' or %s' % CLUSTER_STRATEGIES[-1])
    if 'variable_update' in typed:
      raise UsageError('%s runs on one machine only, not as %s; pass %s' % (
          value(args, 'variable_update'), mode, choices))
    raise UsageError(
        '%s runs --variable_update=%s by default, which runs on one machine '
        'only; pass %s' % (mode, args.variable_update, choices))
  if not cluster and args.variable_update in CLUSTER_ONLY_STRATEGIES:
    raise UsageError(
        '%s needs a cluster: it runs across the workers of one; add '
        '--launch_local_cluster (a cluster of processes on this machine), or '
        'use replicated on one machine' % value(args, 'variable_update'))
  if cluster and not args.cross_replica_sync and (
      args.variable_update != 'parameter_server'):
    raise UsageError(
        '--cross_replica_sync=false with %s: asynchronous updates exist only '
        'for parameter_server; drop the flag or pass '
        '--variable_update=parameter_server' %
        value(args, 'variable_update'))


BUCKETED = ('collective_all_reduce', 'distributed_all_reduce',
            'parameter_server')


def _check_buckets(args, typed, cluster):
  if 'gradient_bucket_bytes' not in typed or args.compare:
    return
  if args.variable_update not in BUCKETED:
    raise UsageError(
        '%s with %s: it sizes the buckets of collective_all_reduce, '
        'distributed_all_reduce and parameter_server\'s pushes only; drop '
        'it or pass one of those as --variable_update' % (
            given(args, 'gradient_bucket_bytes'),
            value(args, 'variable_update')))
  # The all-reduces never run on one machine (_check_strategy refuses them
  # there); a local parameter server has no pushes to cut.
  if args.variable_update == 'parameter_server' and not cluster:
    raise UsageError(
        '%s with %s on one machine: it sizes the pushes to the PS tasks of '
        'a cluster, and a local parameter server has none; drop it or add '
        '--launch_local_cluster' % (given(args, 'gradient_bucket_bytes'),
                                    value(args, 'variable_update')))
  # distributed_all_reduce's buckets are its own packing; upstream's packs
  # the towers' gradients in their order instead (the library refuses both).
  packing = [name for name in ('gradient_repacking',
                               'agg_small_grads_max_bytes')
             if getattr(args, name)]
  if args.gradient_bucket_bytes and packing:
    raise UsageError(
        '%s with %s: upstream\'s packing concatenates the gradients in the '
        'towers\' order, the buckets in the backward pass\'s; drop one of '
        'the two (--gradient_bucket_bytes=0 keeps upstream\'s packing)' % (
            given(args, 'gradient_bucket_bytes'), given(args, packing[0])))


def _check_controller(args, typed, tf_config, launch):
  """The controller's cluster of distributed_all_reduce: a controller and
  workers, no PS task, every task told the controller's address."""
  strategy = args.variable_update == CONTROLLER_STRATEGY
  if not strategy:
    if args.job_name == 'controller':
      raise UsageError(
          '--job_name=controller with %s: a controller drives the one graph '
          'of --variable_update=%s only; pass that, or --job_name=ps or '
          'worker' % (value(args, 'variable_update'), CONTROLLER_STRATEGY))
    if 'controller_host' in typed:
      raise UsageError(
          '%s with %s: only the tasks of --variable_update=%s have a '
          'controller; drop --controller_host' % (
              given(args, 'controller_host'), value(args, 'variable_update'),
              CONTROLLER_STRATEGY))
    return
  for flag in ('num_ps', 'ps_hosts'):
    if flag in typed:
      raise UsageError(
          '%s with --variable_update=%s: no variable lives on a PS task '
          '(the cluster is --num_workers workers that serve and a controller '
          'that runs the graph); drop %s' % (
              given(args, flag), CONTROLLER_STRATEGY, flag_list([flag], args)))
  if args.job_name == 'ps':
    raise UsageError(
        '--job_name=ps with --variable_update=%s: its tasks are a '
        'controller and the workers; pass --job_name=controller or worker'
        % CONTROLLER_STRATEGY)
  if tf_config:
    raise UsageError(
        'TF_CONFIG with --variable_update=%s: TF_CONFIG has no controller '
        'task; unset it and pass --job_name=controller or worker, '
        '--worker_hosts and --controller_host' % CONTROLLER_STRATEGY)
  if args.job_name and not launch and not args.controller_host:
    raise UsageError(
        '--job_name=%s with --variable_update=%s needs --controller_host: '
        'every task is told the controller\'s host:port (the workers watch '
        'it), e.g. --controller_host=10.0.0.1:2222' % (
            args.job_name, CONTROLLER_STRATEGY))
