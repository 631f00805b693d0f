"""What one step's protocol calls hand each other.

`preprocess_device_grads` returns a `GradientState`; the harness passes it
back to `get_gradients_to_apply` and `append_apply_gradients_ops`. With
training options (`variable_mgr.training_options`), its `step_control`
says which steps apply and which state assigns run every step.
"""

import collections

from variable_mgr import ordering


class StepControl(object):
  """What the training options add to a step (see `training_options`).

  Attributes:
    go: bool scalar, the strategy combines and applies this step; None when
      it does every step (the gradients handed over are then not gated).
    ops: assigns of the step's state (accumulators, deferred gradients,
      counters, loss scale) that run every step.
    device: where `go` and the op that waits for the updates live.
  """

  def __init__(self, go, ops, device):
    self.go = go
    self.ops = list(ops)
    self.device = device
    self.ops_appended = False


class GradientState(object):
  """What `preprocess_device_grads` hands to the later protocol calls.

  Attributes:
    apply_devices: the devices the harness applies gradients on.
    tower_grads: `[tower][(grad, var)]` as the towers gave them.
    payload: the strategy's own result (reduced gradients, ...).
    waits: `{variable op name: [ops]}`, what an update of each variable must
      run after (its readers, see `variable_mgr.ordering`, and the
      strategy's own, such as staged reads).
    variable_reads: every op of `waits`, for a harness that orders updates
      across workers (a worker may not update a shared variable while
      another still reads it).
    step_control: a `StepControl` when training options change the step,
      else None.
  """

  def __init__(self, apply_devices, tower_grads, payload, waits):
    self.apply_devices = list(apply_devices)
    self.tower_grads = tower_grads
    self.payload = payload
    self.waits = waits
    self.variable_reads = list(collections.OrderedDict(
        (op, None) for ops in waits.values() for op in ops))
    self._index = ordering.AncestorIndex(self.variable_reads)
    self.step_control = None

  def after_reads(self, grad, var):
    """`grad`, made to arrive after the ops `var`'s update must follow."""
    return ordering.after(grad, self.waits.get(var.op.name, ()), self._index)
