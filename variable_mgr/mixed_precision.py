"""Float16 towers on float32 variables, and the loss scale.

With `use_fp16`, a tower that asks `tf.get_variable` for a trainable float16
variable gets a float32 variable (the one the strategy keeps, updates and
saves) read through a float16 cast: `float32_storage_getter`, which the
manager adds to the custom getters of the scope it gives each tower. The
gradient of the cast is float32, so the update adds float32 gradients to
float32 variables. Non-trainable variables (batch-norm statistics) keep the
dtype asked for.

Small float16 gradients underflow to zero; a loss scale S multiplies the
loss before `tf.gradients` (`scale_loss`) and the manager divides the
gradients by S (`unscale`) before anything else uses them. S is a variable
of the job (`loss_scale`, float32, saved in checkpoints) with its count of
good steps (`loss_scale_normal_steps`): each worker's own, or one on a PS
task that every worker shares (`shared`, the PS strategies on a cluster:
see `strategies.shared_loss_scale`). Fixed, it never changes. Dynamic
(`auto_loss_scale`), a step whose gradients hold an inf or NaN on any tower
(of any worker, where the workers' steps are synchronous) is skipped on
every copy of every variable, S halves (not below 1) and the count
restarts. As in
tf_cnn_benchmarks (`get_loss_scale_update_op`), the good step that follows
`inc_loss_scale_every_n` good steps in a row doubles S and restarts the
count: from 4 with n=2, good steps leave 4, 4, 8, 8, 8, 16 (S doubles every
n+1 good steps). Unlike tf_cnn_benchmarks, whose halving has no floor, S
never falls below 1.

Every op of a step reads S and the count through one snapshot each, taken
once a step; their new values are computed from those snapshots, so each
assign depends on the reads by data and needs no control edge. Both are
resource variables (`variable_mgr.step_state` says why).
"""

import contextlib

from variable_mgr import compat
from variable_mgr import errors
from variable_mgr import ordering
from variable_mgr import step_state
from variable_mgr.compat import tf

LOSS_SCALE_NAME = 'loss_scale'
NORMAL_STEPS_NAME = 'loss_scale_normal_steps'


def float32_storage_getter(getter, name, *args, **kwargs):
  """A custom getter: trainable float16 variables are stored in float32 and
  read as a float16 cast; every other request is passed on unchanged."""
  dtype = kwargs.get('dtype')
  # As get_variable: unset is trainable, any other value by its truth.
  trainable = kwargs.get('trainable')
  if (dtype is not None and tf.as_dtype(dtype) == tf.float16 and
      (trainable is None or trainable)):
    kwargs['dtype'] = tf.float32
    initializer = kwargs.get('initializer')
    if initializer is not None and not callable(initializer):
      # A value's own dtype wins over the one asked for: widen the value.
      kwargs['initializer'] = tf.cast(initializer, tf.float32)
    var = getter(name, *args, **kwargs)
    return tf.cast(var, tf.float16)
  return getter(name, *args, **kwargs)


def with_float32_storage(outer_scope):
  """`create_outer_variable_scope` with `mixed_precision`'s getter added
  inside the strategy's: float16 trainable variables stored in float32."""

  @contextlib.contextmanager
  def scope(device_num):
    with outer_scope(device_num) as strategy_scope:
      with tf.variable_scope(
          strategy_scope,
          custom_getter=float32_storage_getter,
          auxiliary_name_scope=False) as inner:
        yield inner

  return scope


def _state_variable(name, value, dtype, device, shared):
  """A state variable of the manager outside every tower's scope."""
  graph = tf.get_default_graph()
  with graph.name_scope(None), tf.device(device):
    return step_state.state_variable(name, tf.constant(value, dtype), device,
                                     shared)


class LossScale(object):
  """The loss scale of one graph (see the module docstring).

  Args:
    initial: the first (or fixed) scale.
    dynamic: halve and skip on inf/NaN, double on the good step after
      `every_n` good steps.
    every_n: good steps counted before the one that doubles the scale.
    device: where the variables live (the worker's CPU; a PS task when
      `shared`).
    shared: global variables, one state for every worker of a cluster (the
      chief initialises or restores it); else local variables, a state a
      worker.
    read_device: where the step's snapshot is brought for the towers (the
      worker's CPU); None for `device`.
    writer: whether this graph's step assigns the state (`update_ops`):
      False on the workers of a synchronous cluster other than the one that
      writes each step's decision for all.
  """

  def __init__(self, initial, dynamic, every_n, device, shared=False,
               read_device=None, writer=True):
    self.dynamic = dynamic
    self.every_n = every_n
    self.device = device
    self.shared = shared
    self.writer = writer
    self.read_device = device if read_device is None else read_device
    self.variable = _state_variable(LOSS_SCALE_NAME, float(initial),
                                    tf.float32, device, shared)
    self.normal_steps = _state_variable(NORMAL_STEPS_NAME, 0, tf.int32,
                                        device, shared)
    graph = tf.get_default_graph()
    with graph.name_scope(None), tf.name_scope('loss_scale_read'):
      # Read where the variables live; used where the towers are (one copy
      # a step from a PS task to the worker).
      with tf.device(device):
        scale = compat.snapshot(self.variable)
        steps = compat.snapshot(self.normal_steps)
      with tf.device(self.read_device):
        self.value = tf.identity(scale, name='scale')
        self.inverse = tf.math.reciprocal(self.value, name='inverse')
        self._steps = tf.identity(steps, name='normal_steps')

  @property
  def variables(self):
    """`{canonical name: variable}` to save."""
    return {LOSS_SCALE_NAME: self.variable,
            NORMAL_STEPS_NAME: self.normal_steps}

  def scale_loss(self, loss):
    """`loss` in float32 times the scale: differentiate this."""
    loss = tf.cast(loss, tf.float32)
    return loss * self.value

  def unscale(self, grad):
    """`grad` divided by the scale, on the gradient's device."""
    if grad is None:
      return None
    values = grad.values if isinstance(grad, tf.IndexedSlices) else grad
    with tf.colocate_with(values.op), tf.name_scope('unscale'):
      if values.dtype == tf.float16:
        scaled = tf.cast(tf.cast(values, tf.float32) * self.inverse,
                         tf.float16)
      else:
        scaled = values * tf.cast(self.inverse, values.dtype)
    if isinstance(grad, tf.IndexedSlices):
      return tf.IndexedSlices(scaled, grad.indices, grad.dense_shape)
    return scaled

  def update_ops(self, finite, counted):
    """The assigns of a dynamic scale's step.

    Args:
      finite: bool scalar, every gradient of the step is finite.
      counted: bool scalar, the step applies gradients (False on the
        micro-steps of accumulation and the first relaxed step), or None
        for always.
    """
    if not self.dynamic or not self.writer:
      return []
    with tf.device(self.read_device), tf.name_scope('loss_scale_update'):
      if counted is None:
        counted = tf.constant(True)
      good = tf.logical_and(counted, finite)
      bad = tf.logical_and(counted, tf.logical_not(finite))
      steps = self._steps
      # tf_cnn_benchmarks' schedule: a good step that finds `every_n` good
      # steps counted doubles the scale and restarts the count (it is not
      # counted itself); any other good step counts.
      grow = tf.logical_and(good, steps >= self.every_n)
      scale = self.value
      new_scale = tf.where(
          bad, tf.maximum(scale * 0.5, 1.0),
          tf.where(grow, scale * 2.0, scale))
      new_steps = tf.where(
          tf.logical_or(bad, grow), tf.zeros_like(steps),
          tf.where(good, steps + 1, steps))
      with tf.device(self.device):
        return [self.variable.assign(new_scale, read_value=False),
                self.normal_steps.assign(new_steps, read_value=False)]


def tower_all_finite(grads):
  """A bool scalar on the gradients' device(s): every value of every
  gradient of one tower is finite."""
  flags = []
  for g in grads:
    if g is None:
      continue
    values = g.values if isinstance(g, tf.IndexedSlices) else g
    with tf.colocate_with(values.op):
      flags.append(tf.reduce_all(tf.math.is_finite(values)))
  if not flags:
    return tf.constant(True)
  with tf.colocate_with(flags[0].op):
    return tf.reduce_all(tf.stack(flags))


def check_scaled(scale, towers):
  """Refuses towers whose gradients were not taken of `scale.scale_loss`
  (`scale`: the manager's LossScale, None before the first `scale_loss`)."""
  if scale is None:
    raise errors.ProtocolError(
        'use_fp16 but scale_loss was never called: differentiate '
        'mgr.scale_loss(loss) in every tower, so that float16 gradients '
        'do not underflow.')
  index = ordering.AncestorIndex([scale.value.op])
  for t, tower in enumerate(towers):
    grads = [g for g, _ in tower if g is not None]
    if not grads:
      continue
    values = grads[0].values if isinstance(grads[0], tf.IndexedSlices) \
        else grads[0]
    if index.missing([scale.value.op], values.op):
      raise errors.ProtocolError(
          'use_fp16: the gradients of tower %d are not taken of the scaled '
          'loss; differentiate mgr.scale_loss(loss) in every tower.' % t)
