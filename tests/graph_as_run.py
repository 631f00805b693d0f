"""The graph TensorFlow runs for one step, after its optimiser (grappler)
rewrote it and the placer split it by device, and what orders what in it.

The graph a test builds is not the one that runs: grappler adds, moves and
removes ops (`variable_mgr.step_state` tells of one rewrite that read a
variable past its snapshot). An ordering a race depends on is checked here,
on the partition graphs of a real step, with each `_Recv` made a child of
the `_Send` it receives from.
"""

import tensorflow as tf

tf1 = tf.compat.v1

_SENDS = ('_Send', '_HostSend')
_RECVS = ('_Recv', '_HostRecv')
# Ops that pass a variable (its ref buffer or its handle) on, unread.
_FORWARDING = ('Identity', 'RefIdentity') + _SENDS + _RECVS


def _rendezvous_key(node):
  attr = node.attr
  return (attr['tensor_name'].s, attr['send_device'].s,
          attr['recv_device'].s)


class GraphAsRun(object):
  """One step of `sess.run(fetches, feeds)`, as run.

  Attributes:
    nodes: `{name: NodeDef}` over every device's partition.
    parents: `{name: [names]}`, data and control inputs, and for a `_Recv`
      its `_Send`.
  """

  def __init__(self, sess, fetches, feeds):
    options = tf1.RunOptions(output_partition_graphs=True)
    metadata = tf1.RunMetadata()
    sess.run(fetches, feeds, options=options, run_metadata=metadata)
    self.nodes = {}
    for graph in metadata.partition_graphs:
      for node in graph.node:
        self.nodes[node.name] = node
    sends = dict((_rendezvous_key(n), n.name) for n in self.nodes.values()
                 if n.op in _SENDS)
    self.parents = {}
    self.children = dict((name, []) for name in self.nodes)
    for name, node in self.nodes.items():
      parents = [i.lstrip('^').split(':')[0] for i in node.input]
      if node.op in _RECVS:
        parents.append(sends[_rendezvous_key(node)])
      self.parents[name] = parents
      for parent in parents:
        self.children[parent].append(name)
    self._ancestors = {}

  def ancestors(self, name):
    """Every op that runs before `name` by some path of edges."""
    if name not in self._ancestors:
      seen = set()
      stack = [name]
      while stack:
        for parent in self.parents[stack.pop()]:
          if parent not in seen:
            seen.add(parent)
            stack.append(parent)
      self._ancestors[name] = seen
    return self._ancestors[name]

  def reads_and_writes(self, variable):
    """`(reads, writes)` of the variable op named `variable`: the ops that
    take its buffer or handle (through ops that pass it on), the `Assign*`
    ops being writes and every other one a read."""
    reads, writes = [], []
    seen = set()
    stack = [variable]
    while stack:
      for child in self.children[stack.pop()]:
        if child in seen:
          continue
        seen.add(child)
        op = self.nodes[child].op
        if op.startswith('Assign'):
          writes.append(child)
        elif op in _FORWARDING:
          stack.append(child)
        else:
          reads.append(child)
    return reads, writes

  def unordered_reads(self, variable):
    """`[(read, write)]`: the reads of `variable` that do not run before
    one of its writes of the step."""
    reads, writes = self.reads_and_writes(variable)
    return [(r, w) for w in writes for r in reads
            if r not in self.ancestors(w)]
