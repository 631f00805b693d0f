"""The loss scale of the strategies whose workers share variables on PS
tasks: parameter_server (staged or not) and distributed_replicated on a
cluster.

The scale and its count of good steps (`loss_scale`,
`loss_scale_normal_steps`) are global variables on PS task 0: the chief
initialises or restores them, every worker reads the same scale at the
start of each step, and a checkpoint carries them under those names.

Synchronous steps (`host.cross_replica_sync`, always for
distributed_replicated): each worker's finite flag meets the others' in
queues on PS 0 before any update of the step (`worker_exchange`), so every
worker skips the step or none does; the chief alone writes the step's new
scale and count, once a step. Its write follows every worker's read of the
step by data (each worker's flag is computed from gradients scaled by what
it read, and the chief's new values from every flag), and precedes every
worker's read of the next step through the harness's step-end barrier.

Asynchronous steps (parameter_server with `cross_replica_sync=False`): each
worker skips its own step on its own inf or NaN, and every worker's step
writes the scale and count that tf_cnn_benchmarks' schedule gives from the
values it read at its start. Steps that do not overlap therefore follow the
schedule in the order they run, every worker's step counting as one; of
steps that overlap, the last to write wins (the others' halving or count
is lost).
"""

import collections

from variable_mgr import errors
from variable_mgr import mixed_precision
from variable_mgr import training_options
from variable_mgr import worker_exchange
from variable_mgr.compat import tf

# The host attributes a dynamic scale on several workers reads.
SYNC_ATTRIBUTE = 'cross_replica_sync'
WORKER_ATTRIBUTES = ('task_index', 'num_workers')


class SharedLossScaleMixin(object):
  """Put before a `VariableMgr` of shared PS variables (see the module
  docstring).

  Raises (from `configure_training`):
    InterfaceError: a dynamic loss scale on several workers and a host
      without `task_index`, `num_workers` or (parameter_server)
      `cross_replica_sync`, or with values the cluster disagrees with.
  """

  # distributed_replicated: its barriers make every step synchronous.
  always_synchronous = False
  # Whether other workers' updates of the step change what this worker's
  # towers read (the shared variables of parameter_server), so that the
  # exchange must follow this worker's reads.
  exchange_after_reads = True

  def configure_training(self, options):
    workers = training_options.worker_count(self.benchmark_cnn)
    if options.auto_loss_scale and workers > 1:
      self._check_exchange_host(workers)
    super(SharedLossScaleMixin, self).configure_training(options)

  def _check_exchange_host(self, workers):
    host = self.benchmark_cnn
    needed = WORKER_ATTRIBUTES + (
        () if self.always_synchronous else (SYNC_ATTRIBUTE,))
    missing = [a for a in needed if not hasattr(host, a)]
    if missing:
      raise errors.InterfaceError(
          'auto_loss_scale=True with %s on %d workers: the host %s lacks %s; '
          'a dynamic loss scale across workers needs to know which worker '
          'this is and whether steps are synchronous (every worker skips a '
          'step with an inf together) or not (each worker skips its own); '
          'set them or build the host with variable_mgr.ClusterBenchmarkCnn.'
          % (type(self).__name__, workers, type(host).__name__,
             ', '.join(missing)))
    sync = getattr(host, SYNC_ATTRIBUTE, True)
    if not isinstance(sync, bool):
      raise errors.InterfaceError(
          'cross_replica_sync=%r: the host says with True or False whether '
          'the workers\' steps are synchronous.' % (sync,))
    if host.num_workers != workers or not 0 <= host.task_index < workers:
      raise errors.InterfaceError(
          'task_index=%r, num_workers=%r but the cluster\'s worker job has '
          '%d tasks: num_workers must equal it and task_index be one of '
          '0..%d.' % (host.task_index, host.num_workers, workers,
                      workers - 1))

  @property
  def synchronous(self):
    """Whether every worker runs each step together."""
    return self.always_synchronous or bool(
        getattr(self.benchmark_cnn, SYNC_ATTRIBUTE, True))

  @property
  def workers_meet_after_reads(self):
    """True when every update of a step waits for every worker's reads of
    the shared variables for that step (the exchange of a dynamic scale's
    finite flags follows them): a harness needs no barrier of its own
    before the updates then."""
    options = self.training_options
    return (options.use_fp16 and options.auto_loss_scale and
            self.exchange_after_reads and self.synchronous and
            training_options.worker_count(self.benchmark_cnn) > 1)

  def _new_loss_scale(self, options):
    host = self.benchmark_cnn
    workers = training_options.worker_count(host)
    writer = (not self.synchronous or workers == 1 or
              getattr(host, 'task_index', 0) == 0)
    return mixed_precision.LossScale(
        options.initial_loss_scale, options.auto_loss_scale,
        options.inc_loss_scale_every_n, worker_exchange.PS_DEVICE,
        shared=True, read_device=host.cpu_device, writer=writer)

  def _all_towers_finite(self, tower_flags, waits):
    local = tf.reduce_all(tf.stack(tower_flags))
    host = self.benchmark_cnn
    workers = training_options.worker_count(host)
    if workers == 1 or not self.synchronous:
      return local
    reads = []
    if self.exchange_after_reads:
      # Another worker updates the shared variables as soon as it learns
      # the decision; the decision must therefore also say that this
      # worker has read them for the step (its towers' reads, and with
      # staged variables its pulls for the next step), which its gradients
      # alone do not (a pull, a read no gradient needs).
      reads = list(collections.OrderedDict(
          (op, None) for ops in waits.values() for op in ops))
    return worker_exchange.all_workers_true(
        local, workers, host.task_index, 'loss_scale_finite',
        host.cpu_device, reads)
