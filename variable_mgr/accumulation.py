"""Gradients kept across steps: accumulation, deferral, and gating.

The manager hands a strategy, for each tower, the gradients it should
combine; the helpers here change which ones, and on which steps:

- `accumulate` (`backward_passes_per_step=N`): each tower adds N
  micro-batches' gradients in an accumulator of its own (float32 for
  float16 gradients) and hands over their sum, or mean with
  `reduction='mean'`, once every N steps: micro-batches count as towers, so
  with 'mean' the update equals one step on the N-times larger batch, and
  with 'sum' one step of N times as many towers.
- `defer` (`variable_consistency='relaxed'`): each tower hands over the
  gradients it computed in the step before, kept in a variable; the first
  step has none and applies nothing.
- `gate`: the gradients handed over, made dead (TensorFlow's control-flow
  deadness, as the untaken branch of a v1 `tf.cond`) on the steps that must
  not combine or apply (accumulation micro-steps, the first relaxed step, a
  step skipped for an inf): every op of the strategy downstream of them,
  exchanges included, then does not run on any device; `alive_after` gives
  the harness one op that runs every step and, on the other steps, after
  every update.

The state of a step (resource variables, see `variable_mgr.step_state`) is
read through a snapshot taken once a step and written from values computed
from it (data edges order the write after the read), except where a comment
at the control edge says why one is needed.
"""

from variable_mgr import aggregation
from variable_mgr import compat
from variable_mgr import step_state
from variable_mgr.compat import tf

# The ordering of the deferred gradients' reads before their overwrite
# (`defer`); tests turn it off to watch the race it prevents.
ORDER_DEFERRED_READS = True


def _values(grad):
  return grad.values if isinstance(grad, tf.IndexedSlices) else grad


def _short(var):
  """A variable's name, usable in an op name."""
  return var.op.name.replace(':', '_')


def cycle_counter(passes, device):
  """`(is_last, update)` for `passes` micro-steps a cycle.

  Returns:
    is_last: bool scalar, true on the last micro-step of each cycle (steps
      N-1, 2N-1, ... counted from 0).
    update: the assign of the counter for the next step.
  """
  with tf.device(device), tf.name_scope('accumulation_counter'):
    counter = step_state.state_variable(
        'accumulation_step', tf.constant(0, tf.int32), device)
    current = compat.snapshot(counter)
    following = tf.math.floormod(current + 1, passes)
    is_last = tf.equal(following, 0)
    update = counter.assign(following, read_value=False)
  return is_last, update


def accumulate(tower_grads, devices, passes, is_last, use_mean):
  """Adds each tower's gradients to its accumulators.

  Args:
    tower_grads: `[tower][(grad, var)]`.
    devices: one device a tower (where its accumulators live).
    passes: micro-steps a cycle (N > 1).
    is_last: bool scalar of `cycle_counter`.
    use_mean: divide the cycle's sum by N.

  Returns:
    `(handed, updates)`: `[tower][(grad, var)]`, the cycle's sum (or mean)
    so far in each gradient's dtype (the one of the last micro-step is the
    cycle's), and the accumulators' assigns: the sum so far, or zero after
    the last micro-step. Sparse gradients are made dense.
  """
  handed, updates = [], []
  for t, (tower, device) in enumerate(zip(tower_grads, devices)):
    row = []
    with tf.name_scope('accumulate_tower_%d' % t):
      for g, v in tower:
        if g is None:
          row.append((None, v))
          continue
        with tf.device(device):
          g = aggregation.densify(g)
          dtype = g.dtype
          wide = tf.float32 if dtype == tf.float16 else dtype
          acc = step_state.state_variable('accumulator_%s' % _short(v),
                                          tf.zeros(g.shape, wide), device)
          # `total` reads the accumulator; its assign takes a value computed
          # from `total`, so it runs after the read (a data edge).
          total = compat.snapshot(acc) + tf.cast(g, wide)
          updates.append(acc.assign(
              tf.where(is_last, tf.zeros_like(total), total),
              read_value=False))
          if use_mean:
            total = aggregation.scale(total, 1.0 / passes)
          row.append((tf.cast(total, dtype), v))
    handed.append(row)
  return handed, updates


def defer(tower_grads, devices):
  """Hands over each tower's gradients of the step before.

  Returns:
    `(handed, has_previous, updates)`: `[tower][(grad, var)]` read from the
    variables that hold the previous step's gradients (zeros on the first
    step), a bool scalar false on the first step only, and the assigns that
    store this step's gradients for the next one. Sparse gradients are
    made dense.
  """
  handed, updates = [], []
  for t, (tower, device) in enumerate(zip(tower_grads, devices)):
    row = []
    with tf.name_scope('deferred_tower_%d' % t):
      for g, v in tower:
        if g is None:
          row.append((None, v))
          continue
        with tf.device(device):
          g = aggregation.densify(g)
          held = step_state.state_variable('deferred_%s' % _short(v),
                                           tf.zeros(g.shape, g.dtype), device)
          previous = compat.snapshot(held)
          # The previous step's gradient must be read before this step's
          # overwrites it, and nothing else orders the two: the new value
          # does not depend on the read. Without this edge a read that runs
          # late hands over this step's gradient (synchronous, not one step
          # stale).
          waits = [previous.op] if ORDER_DEFERRED_READS else []
          with tf.control_dependencies(waits):
            updates.append(held.assign(g, read_value=False))
          row.append((previous, v))
    handed.append(row)
  with tf.name_scope('deferred_flag'):
    device = devices[0]
    flag = step_state.state_variable(
        'deferred_has_previous', tf.constant(False), device)
    with tf.device(device):
      has_previous = compat.snapshot(flag)
      # True from now on; computed from the read, so it runs after it.
      updates.append(flag.assign(tf.logical_or(has_previous, True),
                                 read_value=False))
  return handed, has_previous, updates


def gate(tower_grads, go):
  """`[tower][(grad, var)]`, each gradient dead unless `go` is true."""
  result = []
  for tower in tower_grads:
    row = []
    for g, v in tower:
      if g is not None:
        values = _values(g)
        with tf.colocate_with(values.op):
          _, values = tf.raw_ops.Switch(data=values, pred=go)
        if isinstance(g, tf.IndexedSlices):
          g = tf.IndexedSlices(values, g.indices, g.dense_shape)
        else:
          g = values
      row.append((g, v))
    result.append(row)
  return result


def gate_token(go, device):
  """An op that runs when `go` is true and is dead otherwise: ops made
  under a control dependency on it are dead too."""
  with tf.device(device), tf.name_scope('gate_token'):
    _, on = tf.raw_ops.Switch(data=go, pred=go)
    return tf.identity(on).op


def alive_after(ops, go, device):
  """An op that runs every step: after `ops` when `go`, at once otherwise
  (when `ops`, downstream of `gate`, are dead and do not run)."""
  with tf.device(device), tf.name_scope('gated_updates'):
    off, on = tf.raw_ops.Switch(data=go, pred=go)
    # The harness's training op must follow the updates when they run (it
    # grouped them before); a dead update makes this identity dead too, and
    # the Merge then takes the other branch.
    with tf.control_dependencies(ops):
      on = tf.identity(on)
    merged = tf.raw_ops.Merge(inputs=[off, on])
  return merged.output.op
