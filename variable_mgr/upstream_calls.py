"""tf_cnn_benchmarks master's call forms, kept in one place.

The strategy classes keep the 2017 harness's signatures (the seed's). Master's
`benchmark_cnn.py` calls the same names differently:

- constructors with its BenchmarkCNN and positional options
  (`VariableMgrLocalReplicated(bench, all_reduce_spec,
  agg_small_grads_max_bytes, agg_small_grads_max_group,
  allreduce_merge_scope)`, ...);
- `trainable_variables_on_device(rel_device_num, abs_device_num,
  writable=False)`;
- `append_apply_gradients_ops(state, opt, grads, training_ops,
  loss_scale_params)`, reading `grad_has_inf_nan` for its automatic loss
  scale;
- `savable_variables()`, `reuse_variables()`, and the attributes
  `use_resource_vars`, `_warmup_ops`, `_reuse_vars` its code and tests read.

`CallForms`, the strategies' metaclass, sees master's host in a constructor
call (`upstream_host.is_master_host`) and builds the manager from
`upstream_host.read_options`; `attach` then gives that one manager master's
methods, on the instance, so a manager built by the 2017 harness keeps the
2017 forms unchanged.
"""

import abc
import contextlib

from variable_mgr import compat
from variable_mgr import errors
from variable_mgr import ordering
from variable_mgr import placement
from variable_mgr import training_options
from variable_mgr import upstream_host
from variable_mgr.compat import tf

# Master's attribute names that its code and tests read off a manager.
WARMUP_OPS = '_warmup_ops'
REUSE_VARS = '_reuse_vars'
STRIP_PORT = '_strip_port'
# Set on a GradientState once its step's loss-scale update is built.
LOSS_SCALE_COUNTED = 'master_loss_scale_counted'
# Set on a GradientState once its step's barrier after the reads is built.
GRADIENTS_READY = 'master_gradients_ready'


class CallForms(abc.ABCMeta):
  """The strategies' metaclass: a class called with master's BenchmarkCNN
  first is built from master's options (see the module docstring)."""

  def __call__(cls, *args, **kwargs):
    if not args or not upstream_host.is_master_host(args[0]):
      return super(CallForms, cls).__call__(*args, **kwargs)
    call = upstream_host.read_options(cls.__name__, args[0], args[1:], kwargs)
    mgr = super(CallForms, cls).__call__(call.host, **call.options)
    if call.training is not None:
      mgr.configure_training(training_options.check_values(
          training_options.TrainingOptions(**call.training)))
    attach(mgr, call.use_resource_vars)
    if cls.__name__ in upstream_host.NO_POST_INIT_COPY:
      # Master's numbers: no copy of tower 0; so every tower's copy is saved
      # (an evaluation restores them all, as master's own does).
      mgr.get_post_init_ops = list
      mgr.savable_variables = lambda: dict(
          (v.op.name, v) for v in tf.global_variables())
    return mgr


class DeviceGradients(list):
  """What master's `preprocess_device_grads` returns under the tower-copy
  strategies: each apply device's `[(grad, var)]`, a list as master's own
  returns (its tests index it and fetch it), holding the project's
  `GradientState` (`state`), which master's harness hands back to
  `get_gradients_to_apply` and `append_apply_gradients_ops`.

  Fetched alone, without the update ops, the gradients carry the step's
  state assigns (relaxed consistency's store of this step's gradients for
  the next): master's tests fetch the deferred gradients twice and expect
  the second fetch to give the first's sums, as master's deferred puts do.
  Master's harness never fetches them, so its steps wait for nothing more.
  """

  def __init__(self, state, towers):
    super(DeviceGradients, self).__init__(towers)
    self.state = state


def _device_gradients(mgr, state):
  control = state.step_control
  towers = []
  for i in range(len(state.apply_devices)):
    grads = mgr.get_gradients_to_apply(i, state)
    if control is not None and control.ops:
      with tf.device(state.apply_devices[i]), tf.control_dependencies(
          control.ops):
        grads = [(None if g is None else tf.identity(g), v)
                 for g, v in grads]
    towers.append(grads)
  return DeviceGradients(state, towers)


def _state_of(gradient_state):
  if isinstance(gradient_state, DeviceGradients):
    return gradient_state.state
  return gradient_state


def _after_every_workers_reads(mgr, state, grads):
  """`grads`, whose updates wait for every worker's reads of the step.

  Master's harness keeps no barrier between the workers' reads of the
  variables they share on the PS tasks and their updates (the project's
  benchmark does): with several synchronous workers an update of one can
  land before another worker's read of the same step (under staged
  variables, its put of the next step's value), and two runs differ (the
  staged cluster's step 2 gave 7.054 in one run and 111.4 in the other).
  The same barrier here, built once a step, through master's own
  `add_sync_queues_and_barrier`.
  """
  host = mgr.benchmark_cnn
  if (mgr.each_tower_has_variables() or mgr.workers_meet_after_reads or
      not host.cross_replica_sync or
      training_options.worker_count(host) < 2):
    return grads
  ready = getattr(state, GRADIENTS_READY, None)
  if ready is None:
    ready = host.add_sync_queues_and_barrier(
        'variable_mgr_gradients_ready_', [tf.group(*state.variable_reads)])
    setattr(state, GRADIENTS_READY, ready)
  return ordering.updates_after(ready, grads)


def _strip_port(name):
  return name[:-2] if name.endswith(':0') else name


def attach(mgr, use_resource_vars):
  """Gives `mgr` (built with a `upstream_host.MasterHost`) master's method
  forms and attributes."""
  host = mgr.benchmark_cnn
  mgr.use_resource_vars = use_resource_vars
  mgr.grad_has_inf_nan = None
  mgr.master_numbers = True
  setattr(mgr, REUSE_VARS, False)
  setattr(mgr, WARMUP_OPS, [])
  setattr(mgr, STRIP_PORT, _strip_port)
  scope_of = mgr.create_outer_variable_scope
  variables_of = mgr.trainable_variables_on_device
  preprocess = mgr.preprocess_device_grads
  to_apply = mgr.get_gradients_to_apply
  append_apply = mgr.append_apply_gradients_ops

  @contextlib.contextmanager
  def create_outer_variable_scope(device_num):
    """The strategy's scope, reopened with master's reuse and resource flags
    (`use_resource_vars=False`, master's default, makes ref variables)."""
    with scope_of(device_num):
      reuse = True if getattr(mgr, REUSE_VARS) else None
      with tf.variable_scope(tf.get_variable_scope(), reuse=reuse,
                             use_resource=mgr.use_resource_vars,
                             auxiliary_name_scope=False):
        yield

  def trainable_variables_on_device(rel_device_num, abs_device_num=None,
                                    writable=False):
    """Master's form; the graph's tower is `abs_device_num` (the towers of
    every worker under distributed_all_reduce)."""
    device = rel_device_num if abs_device_num is None else abs_device_num
    return variables_of(device, writable=writable)

  def preprocess_device_grads(device_grads):
    towers = [list(tower) for tower in device_grads]
    result = preprocess(towers)
    if host.enable_auto_loss_scale:
      with tf.device(host.cpu_device), tf.name_scope('check_for_inf_and_nan'):
        finite = [tf.reduce_all(tf.is_finite(g))
                  for tower in towers for g, _ in tower if g is not None]
        mgr.grad_has_inf_nan = tf.logical_not(tf.reduce_all(tf.stack(finite)))
    apply_devices, state = result
    # Master's warm-up ops put the starting zeros of its deferred gradients;
    # here the initial values of the training options' state.
    setattr(mgr, WARMUP_OPS,
            [v.initializer for v in mgr.step_state_variables])
    if mgr.gradients_by_device:
      with tf.name_scope('device_gradients'):
        return apply_devices, _device_gradients(mgr, state)
    return apply_devices, state

  def get_gradients_to_apply(device_num, gradient_state):
    return to_apply(device_num, _state_of(gradient_state))

  def append_apply_gradients_ops(gradient_state, opt, grads, training_ops,
                                 loss_scale_params=None):
    """Master's form: with an automatic loss scale on the chief, the update
    runs only when no gradient holds an inf or NaN, else the scale halves,
    as master's harness expects of its manager."""
    gradient_state = _state_of(gradient_state)
    grads = _after_every_workers_reads(mgr, gradient_state, list(grads))
    if training_options.worker_count(host) > 1:
      # Master's optimizers do not lock; several workers updating the same
      # variables on the PS would lose parts of each other's updates (the
      # project refuses such an optimizer: see parameter_server's
      # check_locking). The same update, locked.
      compat.lock_updates(opt)
    p = loss_scale_params
    if (p is None or not p.enable_auto_loss_scale or p.loss_scale is None or
        not p.is_chief):
      append_apply(gradient_state, opt, grads, training_ops)
      return
    if mgr.grad_has_inf_nan is None:
      raise errors.ProtocolError(
          'append_apply_gradients_ops with an automatic loss scale before '
          'preprocess_device_grads of a BenchmarkCNN with '
          'enable_auto_loss_scale: call them in master\'s order.')
    # Ordered after the step's reads outside the cond's branch.
    grads = [(gradient_state.after_reads(g, v), v) for g, v in grads
             if g is not None]
    # Master updates the scale in every apply device's call: N times a step
    # on N towers under replicated. Here once a step, in the first call.
    count = not getattr(gradient_state, LOSS_SCALE_COUNTED, False)
    setattr(gradient_state, LOSS_SCALE_COUNTED, True)
    training_ops.append(tf.cond(
        mgr.grad_has_inf_nan,
        lambda: _halve(p) if count else tf.no_op(),
        lambda: _apply_and_count(append_apply, gradient_state, opt, grads, p,
                                 count),
        name='cond_if_grad_has_inf_nan'))

  @contextlib.contextmanager
  def reuse_variables():
    """Variables asked for in here must exist and are reused (master's eval
    graph beside the training one)."""
    old = getattr(mgr, REUSE_VARS)
    setattr(mgr, REUSE_VARS, True)
    try:
      yield
    finally:
      setattr(mgr, REUSE_VARS, old)

  mgr.create_outer_variable_scope = create_outer_variable_scope
  mgr.trainable_variables_on_device = trainable_variables_on_device
  mgr.preprocess_device_grads = preprocess_device_grads
  mgr.get_gradients_to_apply = get_gradients_to_apply
  mgr.append_apply_gradients_ops = append_apply_gradients_ops
  mgr.reuse_variables = reuse_variables
  mgr.savable_variables = lambda: savable_variables(mgr)
  if host.all_towers:
    # Master asks per worker while it builds the single-session graph.
    mgr.get_devices = lambda: list(host.bench.raw_devices)


def savable_variables(mgr):
  """`{name: variable}` for master's Saver: the variables the project
  saves (tower 0's copy, the PS masters), under the names master's own
  manager gives them: the variable's name, less distributed_replicated's
  `ps_var/` (`v0/...` for the tower-copy strategies, `v/...` for the PS
  ones), so that a checkpoint of master's own restores and back."""
  prefix = placement.PS_SHADOW_VAR_PREFIX + '/'
  result = {}
  for var in mgr.get_variables_to_save().values():
    name = var.op.name
    if name.startswith(prefix):
      name = name[len(prefix):]
    result[name] = var
  return result


def _halve(p):
  return tf.group(tf.assign(p.loss_scale, p.loss_scale / 2.),
                  tf.assign(p.loss_scale_normal_steps, 0))


def _apply_and_count(append_apply, gradient_state, opt, grads, p, count):
  ops = []
  append_apply(gradient_state, opt, grads, ops)
  if not count:
    return tf.group(*ops)
  count = tf.cond(
      p.loss_scale_normal_steps < p.inc_loss_scale_every_n,
      lambda: tf.group(p.loss_scale_normal_steps.assign_add(1)),
      lambda: tf.group(tf.assign(p.loss_scale_normal_steps, 0),
                       tf.assign(p.loss_scale, p.loss_scale * 2)))
  return tf.group(count, *ops)
