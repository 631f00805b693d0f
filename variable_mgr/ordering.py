"""What each variable update waits for, and why that is enough.

An update of a variable must not change a value that an op of the same step
has still to read. Which reads can see an update depends on the variable's
kind; the rules below were read from TensorFlow's kernels.

Ref variables (TF 1.15's default). The variable op outputs its buffer; a
read (`v.value()`, the `Identity` made with the variable) outputs the same
buffer, and so do the ops that only reshape, slice whole or pass a tensor on
(`Identity`, `Reshape`, `ExpandDims`, `Squeeze`, a `Cast` to the same type,
control-flow ops, and the `Send`/`Recv` pair between two CPU devices of one
process): their kernels `set_output` their input tensor. The update kernels
(`ApplyGradientDescent`, `Assign*`, `Scatter*`, ... on a ref input) change
that buffer in place (`ctx->mutable_input`, training_op_helpers.h). So an
update of `v` is safe once every op that consumes an alias of `v`'s buffer
has run: those are the *readers* of `v`. They are found by walking the
graph from the variable through the ops that pass a tensor on
(`FORWARDING_OP_TYPES`, not readers themselves) and those that may
(`MAY_FORWARD_OP_TYPES`, readers whose outputs are followed too); every
other consumer counts as a reader, including ops this module does not know
(safe by default). Ops that store a tensor
(queues, staging areas, TensorArrays) keep the alias past their run: the
library's own staged puts store a copy (`compat.snapshot`).

Resource variables (TF 2's default). A `ReadVariableOp` outputs the
variable's current buffer, but every update kernel first makes the buffer
its own: `PrepareToUpdateVariable` copies it when its reference count is not
one (dense updates, and in TF 1.15 `ResourceScatter*` too), and
`EnsureSparseVariableAccess` does the same before sparse updates in later
releases, after which reads copy (`copy_on_read_mode`)
(tensorflow/core/kernels/training_op_helpers.h and
resource_variable_ops.cc, r1.15 and master). So a read that has run keeps
its value whatever comes after; a read that has not run yet would see the
update. The readers of a resource variable are the ops that take its handle
and are not updates: `ReadVariableOp`, `ResourceGather`, ...; their outputs
need no ordering.

The rule, for both kinds: the update of `v` runs after every reader of `v`
that exists when `preprocess_device_grads` is called, except readers whose
outputs no op consumes (they run only when fetched by themselves, and then
race as in plain TensorFlow) and ops that look only at the variable's
metadata (`VarIsInitializedOp`, `Shape`, ...). Readers of other variables,
other towers' ops and the rest of the backward pass are not waited for. A
reader that is already an ancestor of the gradient being applied costs
nothing: `after` adds an edge only for readers that are not, through one
`Identity` of the gradient. Ops that read a variable and are built before
`preprocess_device_grads` (a summary of the weights, say) therefore run in
every step; build them after the training graph to keep them optional.

The graph that runs is grappler's rewrite of the one built: TF 2.x's
arithmetic optimizer rebuilds a narrowing cast-like op above an `Identity`
or a `DeepCopy` (the float16 `Cast` of a ref variable's `read`, for
instance, becomes a `Cast` of the variable itself). The edges added here
wait for the readers' consumers too (a `Cast` is followed) and a rebuilt
read stays their ancestor, so the updates stay ordered; what is not safe
that way is a copy taken to be read later and ordered by an edge on the copy
itself: the manager's own step state, see `variable_mgr.step_state`.
"""

from variable_mgr.compat import tf

# Op types that only pass a tensor on: their output is the input's buffer
# (the kernel's `set_output` of its input) and they read no value.
FORWARDING_OP_TYPES = frozenset([
    'Identity', 'IdentityN', 'RefIdentity', 'StopGradient', 'PreventGradient',
    'Reshape', 'ExpandDims', 'Squeeze', 'Bitcast', 'EnsureShape',
    'PlaceholderWithDefault',
])

# TF 1.x control flow (`tf.cond` and `tf.while_loop` without control flow
# v2): a tensor enters through `Switch`/`Enter` and leaves through
# `Merge`/`Exit`. An op inside cannot be waited for from outside (an op of
# an untaken branch is dead, and a control edge from it would make the
# update dead too; a loop's ops run many times), so a read inside stands
# for the `Merge`/`Exit` ops that it reaches: the construct's end.
_CONTROL_FLOW_ENTRIES = frozenset(['Switch', 'RefSwitch', 'Enter', 'RefEnter'])
_CONTROL_FLOW_EXITS = frozenset(['Merge', 'RefMerge', 'Exit', 'RefExit'])

# Op types that read their input but, in some cases, output its buffer
# unchanged (a `Cast` to the same type, a `Slice` of everything, a `Sum`
# over no axis, an `AddN` of one tensor, ...) or hand it into a function:
# readers whose outputs are followed too.
MAY_FORWARD_OP_TYPES = frozenset([
    'Snapshot', 'CheckNumerics', 'CheckNumericsV2', 'Print', 'DebugIdentity',
    'DebugIdentityV2', 'Cast', 'Conj', 'Slice', 'StridedSlice', 'Split',
    'SplitV', 'Unpack', 'Concat', 'ConcatV2', 'Pack', 'AddN', 'Transpose',
    'ConjugateTranspose', 'Tile', 'Pad', 'PadV2', 'BroadcastTo', 'ReverseV2',
    'Sum', 'Mean', 'Prod', 'Max', 'Min', 'All', 'Any',
    'PartitionedCall', 'StatefulPartitionedCall', 'If', 'StatelessIf',
    'While', 'StatelessWhile', 'Case', 'StatelessCase',
])

# Ops that look at a variable's shape or state, never at its values.
METADATA_OP_TYPES = frozenset([
    'Shape', 'ShapeN', 'Size', 'Rank', 'IsVariableInitialized',
    'VarIsInitializedOp', 'VariableShape', 'DestroyResourceOp',
])

# Ops that write a resource variable (they take its handle but are updates).
_RESOURCE_WRITER_PREFIXES = (
    'Assign', 'ResourceApply', 'ResourceSparseApply', 'ResourceScatter',
    'ResourceStridedSliceAssign',
)


def _is_resource_writer(op):
  return op.type.startswith(_RESOURCE_WRITER_PREFIXES)


def _input_arg_is_ref(op, index):
  """Whether input `index` of `op` is a ref argument (a mutable input)."""
  position = 0
  for arg in op.op_def.input_arg:
    if arg.number_attr:
      count = op.get_attr(arg.number_attr)
    elif arg.type_list_attr:
      count = len(op.get_attr(arg.type_list_attr))
    else:
      count = 1
    if position <= index < position + count:
      return arg.is_ref
    position += count
  return False


def _consumed(op, control_consumers):
  """Whether any op takes an output of `op`, or waits for it."""
  if op in control_consumers:
    return True
  return any(t.consumers() for t in op.outputs)


def _control_consumers(graph):
  """The ops some other op of `graph` has as a control input."""
  result = set()
  for op in graph.get_operations():
    result.update(op.control_inputs)
  return result


def _construct_ends(entry):
  """The `Merge`/`Exit` ops that close the TF 1.x cond or loop that `entry`
  (a `Switch` or `Enter`) opens, along every path out of it."""
  ends = []
  seen = set()
  frontier = [(entry, 1)]
  while frontier:
    op, depth = frontier.pop()
    for consumer in set(c for t in op.outputs for c in t.consumers()):
      inner = depth
      if consumer.type in _CONTROL_FLOW_ENTRIES:
        inner += 1
      elif consumer.type in _CONTROL_FLOW_EXITS:
        inner -= 1
      if (consumer, inner) in seen:
        continue
      seen.add((consumer, inner))
      if inner == 0:
        ends.append(consumer)
      else:
        frontier.append((consumer, inner))
  return ends


def _ref_readers(var_op, control_consumers):
  """Ops that read the buffer of ref variable `var_op` (see module doc)."""
  readers = []
  seen = set()
  frontier = [var_op.outputs[0]]
  while frontier:
    tensor = frontier.pop()
    for consumer in tensor.consumers():
      key = (consumer, tensor)
      if key in seen:
        continue
      seen.add(key)
      if consumer.type in _CONTROL_FLOW_ENTRIES:
        ends = [end for end in _construct_ends(consumer) if end not in seen]
        seen.update(ends)
        readers.extend(ends)
        frontier.extend(t for end in ends for t in end.outputs)
        continue
      if (consumer.type in FORWARDING_OP_TYPES or
          consumer.type in MAY_FORWARD_OP_TYPES):
        frontier.extend(consumer.outputs)
      if consumer.type in FORWARDING_OP_TYPES:
        continue
      if consumer.type in METADATA_OP_TYPES:
        continue
      index = list(consumer.inputs).index(tensor)
      if _input_arg_is_ref(consumer, index):
        continue  # An update (or a ref-forwarding op handled above).
      if consumer.outputs and not _consumed(consumer, control_consumers):
        continue
      readers.append(consumer)
  return readers


def _resource_readers(var_op, control_consumers):
  """Ops that read resource variable `var_op` (see module doc)."""
  readers = []
  seen = set()
  frontier = [var_op.outputs[0]]
  while frontier:
    handle = frontier.pop()
    for consumer in handle.consumers():
      if consumer in seen:
        continue
      seen.add(consumer)
      if consumer.type in _CONTROL_FLOW_ENTRIES:
        ends = [end for end in _construct_ends(consumer) if end not in seen]
        seen.update(ends)
        readers.extend(ends)
        continue
      if (consumer.type in FORWARDING_OP_TYPES or
          consumer.type in MAY_FORWARD_OP_TYPES):
        # A handle passed on (to another device, into a function).
        frontier.extend(t for t in consumer.outputs
                        if t.dtype == tf.resource)
        if consumer.type in FORWARDING_OP_TYPES:
          continue
      if consumer.type in METADATA_OP_TYPES or _is_resource_writer(consumer):
        continue
      if consumer.outputs and not _consumed(consumer, control_consumers):
        continue
      readers.append(consumer)
  return readers


def find_readers(variables):
  """`{variable op name: [reader ops]}` for `variables`, from the default
  graph as it stands (see the module doc for what a reader is)."""
  variables = list(variables)
  if not variables:
    return {}
  graph = variables[0].op.graph
  control_consumers = _control_consumers(graph)
  result = {}
  for var in variables:
    op = var.op
    if op.name in result:
      continue
    if op.outputs and op.outputs[0].dtype == tf.resource:
      result[op.name] = _resource_readers(op, control_consumers)
    else:
      result[op.name] = _ref_readers(op, control_consumers)
  return result


class AncestorIndex(object):
  """Answers "which of these ops are ancestors of that one?" for one set of
  tracked ops, by one memoised walk of the graph: each op's ancestors among
  the tracked ops are a bit mask."""

  def __init__(self, tracked_ops):
    self._bits = {}
    for op in tracked_ops:
      self._bits.setdefault(op, 1 << len(self._bits))
    self._masks = {}

  def _mask(self, target):
    masks = self._masks
    if target in masks:
      return masks[target]
    # A TF 1.x loop is a cycle (NextIteration -> Merge): a parent still
    # being walked counts as having no tracked ancestors. The masks of a
    # cycle may then miss some, which can only add an edge that was not
    # needed, never drop one that was.
    visiting = set()
    stack = [target]
    while stack:
      op = stack[-1]
      if op in masks:
        stack.pop()
        continue
      parents = [t.op for t in op.inputs] + list(op.control_inputs)
      if op not in visiting:
        visiting.add(op)
        missing = [p for p in parents
                   if p not in masks and p not in visiting]
        if missing:
          stack.extend(missing)
          continue
      mask = self._bits.get(op, 0)
      for p in parents:
        mask |= masks.get(p, 0)
      masks[op] = mask
      stack.pop()
    return masks[target]

  def missing(self, ops, target):
    """The ops of `ops` that are neither `target` nor its ancestors."""
    mask = self._mask(target)
    return [op for op in ops if not mask & self._bits[op]]


def _producer(grad):
  """The op whose output the update consumes (values of IndexedSlices)."""
  return grad.values.op if isinstance(grad, tf.IndexedSlices) else grad.op


def after(grad, ops, index):
  """`grad`, or an identity of it that runs after those of `ops` that are
  not already its ancestors (`index`: an AncestorIndex tracking `ops`)."""
  if grad is None or not ops:
    return grad
  missing = index.missing(ops, _producer(grad))
  if not missing:
    return grad
  values = grad.values if isinstance(grad, tf.IndexedSlices) else grad
  with tf.colocate_with(values.op), tf.control_dependencies(missing):
    values = tf.identity(values, name='after_readers')
  if isinstance(grad, tf.IndexedSlices):
    return tf.IndexedSlices(values, grad.indices, grad.dense_shape)
  return values


def updates_after(op, grads):
  """`grads` (`[(grad, var)]`), each passed through an identity on its
  variable's device that runs after `op` (a barrier of the workers).

  The wait is made where the update runs (the PS task), not where the
  gradient is computed: there it holds back only the update, and the
  gradient travels to the PS as soon as it is computed. An identity on the
  worker would hold back the push itself until `op`, which under staged
  variables waits for the next step's pull; on a link of finite speed the
  pull's bytes then go first and the push after them, and the barrier's own
  messages from the PS queue behind the pull (measured: a staged step on
  200 Mbit/s links took the pull plus the push).
  """
  result = []
  for g, v in grads:
    if g is None:
      result.append((g, v))
      continue
    with tf.colocate_with(v), tf.control_dependencies([op]):
      if isinstance(g, tf.IndexedSlices):
        result.append((tf.IndexedSlices(tf.identity(g.values), g.indices,
                                        g.dense_shape), v))
      else:
        result.append((tf.identity(g), v))
  return result
