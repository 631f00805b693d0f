"""A traffic meter: the bytes each device sends and receives in one step.

TensorFlow moves a tensor between devices with a `_Send` (or `_HostSend`)
node on the sender's partition and a `_Recv` on the receiver's, one pair per
tensor and destination device. The meter runs the step once with
`RunOptions(output_partition_graphs=True)` and counts those sends, sizing
each from the static shape of the tensor it sends. Graph rewriting must be
off (see `meter_config`) so that partition-graph node names are the names of
the graph that was built and constants are not folded away.

Transfers done inside ops (NCCL, collective ops) do not appear as sends and
are not counted; neither are the copies of fetched values to the client,
unless a fetched tensor lives on another device than the client's: fetch a
`tf.group` of the outputs to leave them out.
"""

import collections

import tensorflow as tf

from variable_mgr.allreduce import errors

SEND_OPS = ('_Send', '_HostSend')
# Constants of a partition graph: their shape is their value's.
CONST_OPS = ('Const', 'HostConst')

DeviceTraffic = collections.namedtuple(
    'DeviceTraffic', ['sent_bytes', 'received_bytes', 'sends', 'receives'])
DeviceTraffic.__doc__ = """Bytes and transfers into and out of one device."""


def meter_config(config=None):
  """A copy of `config` (or a new ConfigProto) with graph rewriting off:
  Grappler's meta-optimizer disabled and the classic graph optimizer at L0
  (no constant folding, no common-subexpression elimination)."""
  result = tf.compat.v1.ConfigProto()
  if config is not None:
    result.CopyFrom(config)
  result.graph_options.rewrite_options.disable_meta_optimizer = True
  result.graph_options.optimizer_options.opt_level = (
      tf.compat.v1.OptimizerOptions.L0)
  result.graph_options.optimizer_options.do_constant_folding = False
  result.graph_options.optimizer_options.do_common_subexpression_elimination = (
      False)
  return result


def meter_run_options():
  """RunOptions that return the partition graphs of the step."""
  return tf.compat.v1.RunOptions(output_partition_graphs=True)


def _graph_tensor_name(name, index, nodes):
  """The built graph's name for output `index` of partition node `name`.

  A fed tensor `x:i` enters the partition graphs as an `_Arg` node named
  `_arg_x_i_<argument index>`.
  """
  node = nodes.get(name)
  if node is not None and node.op == '_Arg' and name.startswith('_arg_'):
    suffix = '_%d' % node.attr['index'].i
    if name.endswith(suffix):
      fed, _, output = name[len('_arg_'):-len(suffix)].rpartition('_')
      if fed and output.isdigit():
        return '%s:%s' % (fed, output)
  return '%s:%d' % (name, index)


def _send_bytes(node, nodes, graph):
  """Static byte size of the tensor that the send `node` transfers."""
  dtype = tf.as_dtype(node.attr['T'].type)
  source = node.input[0]
  name, _, index = source.partition(':')
  index = int(index or 0)
  shape = None
  if graph is not None:
    try:
      shape = graph.get_tensor_by_name(
          _graph_tensor_name(name, index, nodes)).shape
    except (KeyError, ValueError):
      shape = None
  if shape is None and name in nodes:
    source_node = nodes[name]
    if source_node.op in CONST_OPS:
      shape = tf.TensorShape(source_node.attr['value'].tensor.tensor_shape)
    elif '_output_shapes' in source_node.attr:
      shape = tf.TensorShape(
          source_node.attr['_output_shapes'].list.shape[index])
  if shape is None or not shape.is_fully_defined():
    raise errors.TrafficMeterError(
        'send %r transfers %r, whose shape is unknown (%s); give its graph '
        'to count_traffic and fully defined shapes to the tensors sent'
        % (node.name, source, shape))
  return shape.num_elements() * dtype.size


def count_traffic(partition_graphs, graph=None):
  """Bytes sent and received per device, from partition graphs.

  Args:
    partition_graphs: the `RunMetadata.partition_graphs` of one step.
    graph: the `tf.Graph` that was run; its static shapes size the sends.
      Without it only sends of constants (such as the empty tensors that
      carry control edges) can be sized.

  Returns:
    A dict from full device name to `DeviceTraffic`.

  Raises:
    TrafficMeterError: a send's tensor has no fully defined static shape.
  """
  totals = collections.defaultdict(lambda: [0, 0, 0, 0])
  for partition in partition_graphs:
    nodes = dict((node.name, node) for node in partition.node)
    for node in partition.node:
      if node.op not in SEND_OPS:
        continue
      size = _send_bytes(node, nodes, graph)
      sender = node.attr['send_device'].s.decode()
      receiver = node.attr['recv_device'].s.decode()
      totals[sender][0] += size
      totals[sender][2] += 1
      totals[receiver][1] += size
      totals[receiver][3] += 1
  return dict((device, DeviceTraffic(*counts))
              for device, counts in totals.items())


def measure(session, fetches, feed_dict=None):
  """Runs `fetches` once and returns `count_traffic` of that step.

  The session should have been created with `meter_config()`.
  """
  metadata = tf.compat.v1.RunMetadata()
  session.run(fetches, feed_dict=feed_dict, options=meter_run_options(),
              run_metadata=metadata)
  return count_traffic(metadata.partition_graphs, session.graph)


def busiest(traffic):
  """The largest of any device's sent or received bytes (0 if none)."""
  return max([max(t.sent_bytes, t.received_bytes) for t in traffic.values()]
             or [0])


def ring_lower_bound(num_devices, total_bytes):
  """Bytes each device must send (and receive) to all-reduce `total_bytes`
  over `num_devices` devices: 2(k-1)/k x N."""
  if num_devices < 1:
    raise errors.TrafficMeterError(
        'num_devices must be at least 1; got %r' % (num_devices,))
  return 2.0 * (num_devices - 1) / num_devices * total_bytes
