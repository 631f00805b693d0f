"""All-reduce algorithms over `[tower][tensor]`, built from plain TF ops.

Every public function here has the form::

    reduced = fn(tower_tensors, devices, **params)

`tower_tensors[d][i]` is tensor `i` of tower `d`; `devices[d]` is the device
string of tower `d`. The result has the same `[tower][tensor]` layout, and
`reduced[d][i]` lives on `devices[d]` and equals the SUM over towers of
`tower_tensors[.][i]`. With two towers holding two tensors each::

    [[A, B],           [[A+C, B+D],
     [C, D]]    ->      [A+C, B+D]]

Tensors may be scalars or empty. With one tower, or no tensors, the input is
returned unchanged (its tensors are expected to be on their tower device
already). Every function validates its input first and raises
`TowerTensorsError` (bad layout) or `AlgorithmOptionError` (bad parameter)
before building any op; chunking algorithms (`ring`, `halving_doubling`, and
`shuffle` with more than one shard) raise `StaticShapeError` for tensors whose
shape is not fully defined.

Traffic, for N bytes of tensors on k towers (each device sends and receives
at least 2(k-1)/k x N in any all-reduce): `ring`, and `halving_doubling` when
k is a power of two, reach that bound; `copy` and `hierarchical_copy` make the
device that sums a tensor move 2(k-1) times its size; `shuffle` moves all the
bytes through the parameter devices.
"""

import weakref

import tensorflow as tf

from variable_mgr import compat
from variable_mgr import errors as core_errors
from variable_mgr.allreduce import errors
from variable_mgr.allreduce import layout


def _prepare(tower_tensors, devices):
  towers, devices = layout.check_towers(tower_tensors, devices)
  trivial = len(devices) == 1 or not towers[0]
  return towers, devices, trivial


def _by_index(towers, build_one):
  """Calls `build_one(i, [tensor i of each tower])` for every index `i` and
  returns the `[tower][tensor]` transpose of the per-index results."""
  columns = [build_one(i, [row[i] for row in towers])
             for i in range(len(towers[0]))]
  return [[column[d] for column in columns] for d in range(len(towers))]


def _check_positive_int(name, value):
  if isinstance(value, bool) or not isinstance(value, int) or value < 1:
    raise errors.AlgorithmOptionError(
        '%s must be a positive integer; got %r' % (name, value))


def copy(tower_tensors, devices):
  """Sums tensor `i` on `devices[i % k]` and copies the sum to every tower.

  The seed's algorithm: one sum per tensor (in tower order), placed
  round-robin, then one copy per other tower.
  """
  towers, devices, trivial = _prepare(tower_tensors, devices)
  if trivial:
    return towers
  k = len(devices)

  def one(i, xs):
    home = i % k
    with tf.device(devices[home]):
      total = compat.sum_in_order(xs)
    outs = []
    for d in range(k):
      if d == home:
        outs.append(total)
      else:
        with tf.device(devices[d]):
          outs.append(tf.identity(total))
    return outs

  with tf.name_scope('copy_all_reduce'):
    return _by_index(towers, one)


def ring(tower_tensors, devices, num_rings=1):
  """Ring all-reduce: a reduce-scatter along a ring, then an all-gather.

  Each tensor is flattened and cut into `num_rings` slices, and each slice
  into k chunks. In the reduce-scatter a chunk travels once around its ring,
  each device adding its own piece, so that after k-1 hops one device holds
  the chunk's full sum. Every tower then concatenates the k x num_rings
  reduced chunks (one transfer per chunk and reader: each device sends and
  receives (k-1)/k of the bytes, as in a ring all-gather, without relay ops).
  Even rings run in device order, odd rings in reverse, so that parallel
  rings use both directions of each link; the starting device rotates with
  the tensor index so that small tensors spread over all devices.

  Args:
    tower_tensors: `[tower][tensor]`, fully defined shapes.
    devices: one device string per tower.
    num_rings: number of parallel rings (the `#n` of `xring#n`).

  Returns:
    `[tower][tensor]` sums, as described in the module docstring.
  """
  _check_positive_int('num_rings', num_rings)
  towers, devices, trivial = _prepare(tower_tensors, devices)
  if trivial:
    return towers
  k = len(devices)
  constants = layout.call_constants()

  def one(i, xs):
    n = layout.num_elements(xs[0])
    if n == 0:
      return xs
    sizes = [c for part in layout.split_sizes(n, num_rings)
             for c in layout.split_sizes(part, k)]
    chunks = [layout.flat_split(xs[d], sizes, devices[d], constants)
              for d in range(k)]
    reduced = [None] * len(sizes)
    for r in range(num_rings):
      order = [(i + x) % k for x in range(k)]
      if r % 2:
        order.reverse()
      for j in range(k):
        c = r * k + j
        if not sizes[c]:
          continue
        # Chunk j starts at ring position j and ends at position j - 1.
        acc = chunks[order[j]][c]
        for hop in range(1, k):
          d = order[(j + hop) % k]
          with tf.device(devices[d]):
            acc = tf.add(acc, chunks[d][c])
        reduced[c] = acc
    outs = []
    for d in range(k):
      pieces = [reduced[c] if sizes[c] else chunks[d][c]
                for c in range(len(sizes))]
      outs.append(layout.flat_join(pieces, xs[0].shape, devices[d],
                                   constants))
    return outs

  with tf.name_scope('ring_all_reduce'):
    return _by_index(towers, one)


def shuffle(tower_tensors, devices, param_devices, num_shards=None):
  """Gathers, sums and scatters each tensor through parameter devices.

  Each tensor is cut into `num_shards` flat pieces; piece j of tensor i is
  summed on `param_devices[(i + j) % len(param_devices)]`, and every tower
  concatenates the summed pieces. With the worker CPU as the one parameter
  device this is upstream's `pscpu`; with the tower devices, `psgpu`.

  Args:
    tower_tensors: `[tower][tensor]`.
    devices: one device string per tower.
    param_devices: non-empty list of devices that do the sums.
    num_shards: pieces per tensor; defaults to `len(param_devices)`. A
      tensor with fewer elements is cut into as many pieces as it has
      elements.

  Returns:
    `[tower][tensor]` sums, as described in the module docstring.
  """
  param_devices = list(param_devices or [])
  if not param_devices:
    raise errors.AlgorithmOptionError(
        'shuffle all-reduce needs at least one parameter device; got %r'
        % (param_devices,))
  if num_shards is None:
    num_shards = len(param_devices)
  _check_positive_int('num_shards', num_shards)
  towers, devices, trivial = _prepare(tower_tensors, devices)
  if trivial:
    return towers
  k = len(devices)
  num_params = len(param_devices)
  constants = layout.call_constants()

  def one(i, xs):
    shards = num_shards
    if shards > 1:
      shards = min(shards, layout.num_elements(xs[0]))
      if shards == 0:
        return xs
    if shards == 1:
      with tf.device(param_devices[i % num_params]):
        total = compat.sum_in_order(xs)
      outs = []
      for d in range(k):
        with tf.device(devices[d]):
          outs.append(tf.identity(total))
      return outs
    sizes = layout.split_sizes(layout.num_elements(xs[0]), shards)
    pieces = [layout.flat_split(xs[d], sizes, devices[d], constants)
              for d in range(k)]
    reduced = []
    for j in range(shards):
      with tf.device(param_devices[(i + j) % num_params]):
        reduced.append(compat.sum_in_order([pieces[d][j] for d in range(k)]))
    return [layout.flat_join(reduced, xs[0].shape, devices[d], constants)
            for d in range(k)]

  with tf.name_scope('shuffle_all_reduce'):
    return _by_index(towers, one)


def halving_doubling(tower_tensors, devices):
  """Recursive halving (reduce-scatter), then recursive doubling (gather).

  With p the largest power of two <= k, towers p..k-1 first add their
  tensors into towers 0..k-p-1 and at the end copy the result back from
  them, so any k >= 1 is correct. Among the p towers, at step h = p/2, p/4,
  ..., 1 tower d exchanges half of its current flat segment with tower
  d XOR h and keeps the sum of the other half (kept half chosen by bit h of
  d); the doubling steps h = 1, 2, ..., p/2 concatenate the segments back.
  Each step costs one split and one add (or one concat) per device, so a
  tensor needs O(p log p) ops; when k is a power of two each device sends
  and receives 2(k-1)/k of the tensor's bytes.

  Returns:
    `[tower][tensor]` sums, as described in the module docstring.
  """
  towers, devices, trivial = _prepare(tower_tensors, devices)
  if trivial:
    return towers
  k = len(devices)
  p = 1 << (k.bit_length() - 1)
  extra = k - p
  constants = layout.call_constants()

  def one(unused_i, xs):
    n = layout.num_elements(xs[0])
    if n == 0:
      return xs
    vals = []
    for d in range(p):
      flat = layout.flatten(xs[d], devices[d], constants)
      if d < extra:
        other = layout.flatten(xs[p + d], devices[p + d], constants)
        with tf.device(devices[d]):
          flat = tf.add(flat, other)
      vals.append(flat)
    lo, hi = [0] * p, [n] * p
    h = p // 2
    while h >= 1:
      mids = [lo[d] + (hi[d] - lo[d]) // 2 for d in range(p)]
      halves = [layout.split(vals[d], [mids[d] - lo[d], hi[d] - mids[d]],
                             devices[d], constants) for d in range(p)]
      new_vals = []
      for d in range(p):
        keep = 1 if d & h else 0
        with tf.device(devices[d]):
          new_vals.append(tf.add(halves[d][keep], halves[d ^ h][keep]))
        if keep:
          lo[d] = mids[d]
        else:
          hi[d] = mids[d]
      vals = new_vals
      h //= 2
    h = 1
    while h < p:
      new_vals = []
      for d in range(p):
        pair = [vals[d], vals[d ^ h]]
        if d & h:
          pair.reverse()
        new_vals.append(layout.concat(pair, devices[d], constants))
      vals = new_vals
      h *= 2
    outs = [layout.restore_shape(vals[d], xs[0].shape, devices[d], constants)
            for d in range(p)]
    for d in range(p, k):
      with tf.device(devices[d]):
        outs.append(tf.identity(outs[d - p]))
    return outs

  with tf.name_scope('halving_doubling_all_reduce'):
    return _by_index(towers, one)


def hierarchical_copy(tower_tensors, devices, num_groups=2):
  """Sums within groups of towers, then across the groups' leaders.

  Towers are cut into `num_groups` contiguous groups whose sizes differ by at
  most one (so an odd count keeps every tower). For tensor i, the leader of a
  group is its member `i % group_size`; each leader sums its group, leader
  `i % num_groups` sums the partial sums, the total is copied to the other
  leaders and from each leader to its group. On an 8-GPU DGX-1 the default
  two groups are the two fully connected quads.

  Returns:
    `[tower][tensor]` sums, as described in the module docstring.
  """
  _check_positive_int('num_groups', num_groups)
  towers, devices, trivial = _prepare(tower_tensors, devices)
  if trivial:
    return towers
  k = len(devices)
  groups = []
  start = 0
  for size in layout.split_sizes(k, min(num_groups, k)):
    groups.append(list(range(start, start + size)))
    start += size

  def one(i, xs):
    leaders = [group[i % len(group)] for group in groups]
    partials = []
    for group, leader in zip(groups, leaders):
      with tf.device(devices[leader]):
        partials.append(compat.sum_in_order([xs[d] for d in group]))
    main = i % len(groups)
    with tf.device(devices[leaders[main]]):
      total = compat.sum_in_order(partials)
    outs = [None] * k
    for g, (group, leader) in enumerate(zip(groups, leaders)):
      if g == main:
        local = total
      else:
        with tf.device(devices[leader]):
          local = tf.identity(total)
      for d in group:
        if d == leader:
          outs[d] = local
        else:
          with tf.device(devices[d]):
            outs[d] = tf.identity(local)
    return outs

  with tf.name_scope('hierarchical_copy_all_reduce'):
    return _by_index(towers, one)


def nccl(tower_tensors, devices):
  """NCCL all-reduce: one `NcclAllReduce` op per tower and tensor.

  NCCL has no CPU kernel: such a graph builds anywhere but runs only on two
  or more physical GPUs, and every output of one all-reduce must be run or
  the step hangs. Tensors with no elements skip NCCL.

  Raises:
    NcclDeviceError: a device is not a GPU.
  """
  towers, devices = layout.check_towers(tower_tensors, devices)
  not_gpu = [d for d in devices
             if tf.compat.v1.DeviceSpec.from_string(d).device_type
             not in ('GPU', 'gpu')]
  if not_gpu:
    raise core_errors.NcclDeviceError(
        'NCCL all-reduce needs GPU devices; %r are not GPUs (use "xring" or '
        '"rechd" for CPU towers)' % (not_gpu,))
  if len(devices) == 1 or not towers[0]:
    return towers
  k = len(devices)

  def one(unused_i, xs):
    if xs[0].shape.num_elements() == 0:
      return xs
    placed = []
    for d in range(k):
      x = xs[d]
      if layout.device_key(x.device or '') != layout.device_key(devices[d]):
        with tf.device(devices[d]):
          x = tf.identity(x)
      placed.append(x)
    return list(compat.nccl_all_sum(placed))

  with tf.name_scope('nccl_all_reduce'):
    return _by_index(towers, one)


class _CollectiveKeys(object):
  """Group and instance keys of one graph, allocated in build order, so that
  workers that build the same graph agree on them."""

  def __init__(self):
    self.groups = {}
    self.next_instance = 1

  def group_key(self, devices):
    key = tuple(layout.device_key(d) for d in devices)
    if key not in self.groups:
      self.groups[key] = len(self.groups) + 1
    return self.groups[key]

  def reserve_instance_keys(self, count):
    start = self.next_instance
    self.next_instance += count
    return start


_COLLECTIVE_KEYS = weakref.WeakKeyDictionary()


def collective(tower_tensors, devices, group_key=None, instance_key_start=None):
  """TensorFlow collective all-reduce (merge 'Add', final 'Id').

  One `CollectiveReduce` op per tower and tensor, with group size k. Key
  scheme: unless given, the group key is allocated per distinct (ordered)
  device list and the instance keys consecutively per tensor, both counted
  from 1 within the graph in build order, so identical graphs built by
  several workers get identical keys. Callers that create other collectives
  in the same graph should pass explicit keys that do not collide. Tensors
  with no elements skip the collective. A tensor with no device gets an
  identity on its tower's device, and float16 travels as float32 on
  TensorFlow releases whose collectives lack half (see
  `compat.collective_all_reduce`).

  Args:
    tower_tensors: `[tower][tensor]`.
    devices: one distinct device string per tower.
    group_key: optional int; overrides the allocated group key.
    instance_key_start: optional int; tensor i then uses instance key
      `instance_key_start + i`.

  Returns:
    `[tower][tensor]` sums, as described in the module docstring.
  """
  if group_key is not None:
    _check_positive_int('group_key', group_key)
  if instance_key_start is not None:
    _check_positive_int('instance_key_start', instance_key_start)
  towers, devices, trivial = _prepare(tower_tensors, devices)
  if trivial:
    return towers
  k = len(devices)
  if len(set(layout.device_key(d) for d in devices)) != k:
    raise errors.AlgorithmOptionError(
        'collective all-reduce needs distinct devices; got %r' % (devices,))
  graph = towers[0][0].graph
  keys = _COLLECTIVE_KEYS.setdefault(graph, _CollectiveKeys())
  if group_key is None:
    group_key = keys.group_key(devices)
  if instance_key_start is None:
    instance_key_start = keys.reserve_instance_keys(len(towers[0]))

  def one(i, xs):
    if xs[0].shape.num_elements() == 0:
      return xs
    return [compat.collective_all_reduce(xs[d], k, group_key,
                                         instance_key_start + i, devices[d])
            for d in range(k)]

  with tf.name_scope('collective_all_reduce'):
    return _by_index(towers, one)
