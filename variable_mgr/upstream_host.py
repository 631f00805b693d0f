"""tf_cnn_benchmarks master's `BenchmarkCNN`, read as this project's host.

Master's harness (tensorflow/benchmarks' last `benchmark_cnn.py`) builds its
managers with its own object, not the 2017 one the host interface
(`variable_mgr.interface`) describes: it has `params` (the flags, with
`ps_hosts` a comma-separated string and `cross_replica_sync`) and
`cluster_manager` (`get_cluster_spec()`, None locally) instead of
`cluster` and a `ps_hosts` list, no `param_server_device` under the
all-reduce cluster modes, and upper-case `local_parameter_device` values in
its tests. `MasterHost` presents it under the project's names, read live
(master changes `raw_devices`, `cpu_device` and `devices` while it builds a
single-session graph); `read_options` turns master's positional
constructor options and the flags its variable_mgr.py read off `params`
into the project's keyword options, refusing what the project does not do.
`variable_mgr.upstream_calls` uses both when a strategy class is called with
such a host.
"""

import collections

from variable_mgr import errors

# The attributes that tell master's BenchmarkCNN from a 2017-style host.
MASTER_ATTRIBUTES = ('params', 'cluster_manager')

# Master's positional options after the host, by strategy class.
POSITIONAL = {
    'VariableMgrLocalReplicated': (
        'all_reduce_spec', 'agg_small_grads_max_bytes',
        'agg_small_grads_max_group', 'allreduce_merge_scope'),
    'VariableMgrDistributedAllReduce': (
        'all_reduce_spec', 'job_name', 'num_workers',
        'agg_small_grads_max_bytes', 'agg_small_grads_max_group',
        'allreduce_merge_scope'),
    'VariableMgrCollectiveAllReduce': (
        'all_reduce_spec', 'num_workers', 'num_gpus', 'task_id',
        'allreduce_merge_scope'),
}

# What `read_options` returns: the host, the constructor's keyword options,
# the training options' keywords (None: none), and master's flags the
# manager keeps reading (use_resource_vars).
MasterCall = collections.namedtuple(
    'MasterCall', 'host options training use_resource_vars')

# Strategies whose towers master starts from their own initial values: its
# independent mode copies nothing after init (the project's copies tower
# 0's values to every tower).
NO_POST_INIT_COPY = ('VariableMgrIndependent',)


def is_master_host(obj):
  """Whether `obj` is tf_cnn_benchmarks master's BenchmarkCNN (or one like
  it): it has `params` and `cluster_manager`."""
  return all(hasattr(obj, name) for name in MASTER_ATTRIBUTES)


class MasterHost(object):
  """The project's host interface over master's BenchmarkCNN `bench`.

  Every attribute is read from `bench` when asked, since master changes its
  devices while building a single-session graph. `all_towers` (master's
  distributed_all_reduce with a controller) presents the towers of every
  worker, `/job:worker/replica:0/task:k/<device>:i`, as
  `variable_mgr.ControllerBenchmarkCnn` does.
  """

  def __init__(self, bench, all_towers=False):
    self.bench = bench
    self.all_towers = all_towers

  @property
  def params(self):
    return self.bench.params

  @property
  def raw_devices(self):
    if not self.all_towers:
      return list(self.bench.raw_devices)
    return ['/job:worker/replica:0/task:%d/%s:%d' % (k, self.params.device, i)
            for k in range(self.bench.num_workers)
            for i in range(self.bench.num_gpus)]

  @property
  def devices(self):
    return self.bench.devices

  @devices.setter
  def devices(self, value):
    self.bench.devices = value

  @property
  def cpu_device(self):
    if self.all_towers:
      return '/job:worker/replica:0/task:0/cpu:0'
    return self.bench.cpu_device

  @property
  def param_server_device(self):
    # Master sets none under distributed_all_reduce and collective_all_reduce.
    return getattr(self.bench, 'param_server_device', None) or self.cpu_device

  @property
  def local_parameter_device_flag(self):
    return self.bench.local_parameter_device_flag.lower()

  @property
  def num_gpus(self):
    return len(self.raw_devices)

  @property
  def ps_hosts(self):
    return [h for h in (self.params.ps_hosts or '').split(',') if h]

  @property
  def cluster(self):
    manager = self.bench.cluster_manager
    return manager.get_cluster_spec() if manager is not None else None

  @property
  def num_workers(self):
    return self.bench.num_workers

  @property
  def task_index(self):
    return self.bench.task_index

  @property
  def cross_replica_sync(self):
    return self.params.cross_replica_sync

  @property
  def enable_auto_loss_scale(self):
    return bool(getattr(self.bench, 'enable_auto_loss_scale', False))

  def add_sync_queues_and_barrier(self, name_prefix, enqueue_after_list):
    return self.bench.add_sync_queues_and_barrier(name_prefix,
                                                  enqueue_after_list)


def _refuse(name, value, rule, fix):
  raise errors.IncompatibleOptionsError(
      '--%s=%s: %s; %s.' % (name, value, rule, fix))


def _master_values(class_name, args, kwargs):
  """`{name: value}` of master's constructor options, positional or named."""
  names = POSITIONAL.get(class_name, ())
  if len(args) > len(names):
    raise errors.ProtocolError(
        '%s(benchmark_cnn, %s): tf_cnn_benchmarks master passes %d options '
        'after its BenchmarkCNN (%s), not %d; call it as master\'s '
        'benchmark_cnn.py does.' %
        (class_name, ', '.join(repr(a) for a in args), len(names),
         ', '.join(names) or 'none', len(args)))
  values = dict(zip(names, args))
  for name, value in kwargs.items():
    if name not in names or name in values:
      raise errors.ProtocolError(
          '%s(benchmark_cnn, ..., %s=%r): not an option tf_cnn_benchmarks '
          'master passes here (%s); call it as master\'s benchmark_cnn.py '
          'does, or build the host with variable_mgr.LocalBenchmarkCnn to '
          'use this project\'s keyword options.' %
          (class_name, name, value, ', '.join(names) or 'none'))
    values[name] = value
  missing = [n for n in names if n not in values]
  if missing:
    raise errors.ProtocolError(
        '%s with master\'s BenchmarkCNN lacks %s: master passes %s.' %
        (class_name, ', '.join(missing), ', '.join(names)))
  return values


def _check_agrees(values, bench):
  """Master's counts passed to the constructor must be the host's."""
  for name, attribute in (('num_workers', 'num_workers'),
                          ('num_gpus', 'num_gpus'), ('task_id', 'task_index')):
    if name in values and values[name] != getattr(bench, attribute):
      raise errors.InterfaceError(
          '%s=%r but the BenchmarkCNN has %s=%r: they must agree (pass '
          'bench.%s as master\'s benchmark_cnn.py does).' %
          (name, values[name], attribute, getattr(bench, attribute),
           attribute))
  if values.get('allreduce_merge_scope', 1) != 1:
    _refuse('allreduce_merge_scope', values['allreduce_merge_scope'],
            'this project groups no all-reduces under shared name scopes '
            '(a scoped-allocator layout that changes no sum)',
            'drop the flag (its default is 1)')


def _all_reduce_options(values, params, class_name):
  """The project's all-reduce options of replicated and
  distributed_all_reduce from master's options and flags."""
  spec = values.get('all_reduce_spec') or None
  if params.gpu_indices and spec is not None:
    _refuse('gpu_indices', params.gpu_indices,
            'this project orders a ring by the tower devices',
            'drop --gpu_indices')
  options = {
      'all_reduce_spec': spec,
      'agg_small_grads_max_bytes': values['agg_small_grads_max_bytes'],
      'agg_small_grads_max_group': values['agg_small_grads_max_group'],
  }
  if class_name != 'VariableMgrLocalReplicated':
    return options
  if getattr(params, 'xla_compile', False):
    _refuse('xla_compile', True,
            'master compiles replicated\'s all-reduce with XLA; this '
            'project does not',
            'drop --xla_compile, or use --variable_update=parameter_server')
  if params.hierarchical_copy:
    if spec is not None:
      _refuse('hierarchical_copy', True,
              'with --all_reduce_spec=%s master drops it silently' % spec,
              'choose one (--all_reduce_spec=hcopy is the same)')
    if params.network_topology not in ('dgx1', None):
      _refuse('network_topology', params.network_topology,
              'the project\'s hcopy has one layout',
              'drop --network_topology')
    options['all_reduce_spec'] = 'hcopy'
  options['use_nccl'] = False
  options['gradient_repacking'] = params.gradient_repacking
  options['float16_transfer'] = bool(params.use_fp16 and
                                     params.compact_gradient_transfer)
  return options


def _collective_spec(values, params):
  spec = values.get('all_reduce_spec')
  if spec != 'collective':
    _refuse('all_reduce_spec', spec,
            'collective_all_reduce reduces with one collective all-reduce '
            'a gradient, which this project does not shard or split by size',
            'pass --all_reduce_spec=collective')
  if params.gpu_indices:
    _refuse('gpu_indices', params.gpu_indices,
            'collective_all_reduce lets TensorFlow order its ring',
            'drop --gpu_indices')


def read_options(class_name, bench, args, kwargs):
  """A `MasterCall` for `class_name(bench, *args, **kwargs)` as master's
  benchmark_cnn.py makes it.

  Raises:
    ProtocolError: options master does not pass.
    IncompatibleOptionsError: a master flag this project does not support,
      naming the flag, the rule and the fix.
    InterfaceError: counts passed that disagree with `bench`.
  """
  params = bench.params
  values = _master_values(class_name, args, kwargs)
  _check_agrees(values, bench)
  options = {}
  training = None
  host = MasterHost(bench)
  if class_name == 'VariableMgrLocalReplicated':
    options = _all_reduce_options(values, params, class_name)
    if params.variable_consistency != 'strong':
      training = {'variable_consistency': params.variable_consistency}
  elif class_name == 'VariableMgrDistributedAllReduce':
    if not bench.job_name:
      _refuse('variable_update', 'distributed_all_reduce',
              'without --job_name master builds it on this process\'s '
              'devices alone (job "localhost"); this project\'s '
              'distributed_all_reduce spans the workers of a cluster',
              'run --variable_update=replicated with the same '
              '--all_reduce_spec, or start a controller and workers')
    options = _all_reduce_options(values, params, class_name)
    host = MasterHost(bench, all_towers=True)
  elif class_name == 'VariableMgrCollectiveAllReduce':
    _collective_spec(values, params)
    # Master sums over every tower of every worker, as its replicated does.
    options = {'reduction': 'sum'}
  return MasterCall(host, options, training,
                    bool(params.use_resource_vars))
