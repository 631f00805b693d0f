"""The manager's own variables that carry state from one step to the next.

Accumulators, deferred gradients, the counters and the loss scale are read
once a step through a snapshot (`compat.snapshot`) and written from values
computed from that snapshot, or after it (see `accumulation` and
`mixed_precision`). The order of a step's read and write holds only if every
op that uses the state reads the snapshot, not the variable.

They are resource variables whatever the graph's default. With a ref
variable (TF 1.15's default, or TF 2 after `disable_resource_variables()`)
the snapshot is a `DeepCopy` of the variable's `read` Identity, and the
graph optimiser of TF 2.x (grappler's arithmetic optimizer, stage
`ReorderCastLikeAndValuePreserving`) counts `DeepCopy` and `Identity` as
value-preserving: a consumer of the copy that narrows its type (`IsFinite`
of a deferred gradient, the float16 `Cast` of the loss scale in a tower's
backward pass) is rebuilt above them, reading the variable's buffer itself.
That new read has none of the copy's edges, so it can run after the step's
write. With `variable_consistency='relaxed'` and a dynamic loss scale this
made the finite check look at the current step's gradient instead of the
deferred one (the wrong step skipped, an inf applied), and the gradients of
the step that halves the scale be scaled by the new scale but divided by the
old (seen on TF 2.21; TF 1.15.5's optimiser leaves `DeepCopy` alone). A
resource variable's snapshot is a `ReadVariableOp`, which no rewrite moves
an op above, and a later write does not change a value already read (the
update copies the buffer while a read holds it: see `ordering`).
"""

from variable_mgr.compat import tf

# Whether the state is made of resource variables; tests turn it off to
# watch the race it prevents (see the module doc).
RESOURCE_STATE = True


def state_variable(name, initial, device, shared=False):
  """A non-trainable variable holding `initial` at first, on `device`; a
  resource variable unless `RESOURCE_STATE` is off.

  A local variable (each worker of a cluster initialises its own), or with
  `shared` a global one (the chief initialises or restores it, and every
  worker reads the same: state kept on a PS task).
  """
  collection = (tf.GraphKeys.GLOBAL_VARIABLES if shared
                else tf.GraphKeys.LOCAL_VARIABLES)
  with tf.device(device):
    return tf.Variable(initial, name=name, trainable=False,
                       collections=[collection],
                       use_resource=True if RESOURCE_STATE else None)
