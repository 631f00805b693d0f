"""Packing of `[tower][tensor]` before an all-reduce, and the inverse after.

Three independent wrappers of an all-reduce `reduce_fn(tower_tensors,
devices, **params) -> [tower][tensor]` (see `algorithms`), each returning a
function of the same form that computes the same sums:

* `with_repacking(f, num_packs)`: per dtype, every tower lays all its
  tensors flat end to end and cuts that into `num_packs` nearly equal packs
  (each pack one concatenation of the tensors, or of the parts of the
  tensors, that fall in it); `f` reduces the packs; every tower cuts each
  reduced pack into those parts, joins the parts of a tensor that straddles
  packs, and reshapes. Each element is copied once to pack and once to
  unpack.
* `with_small_tensor_aggregation(f, max_bytes, max_group)`: runs of
  consecutive tensors of one dtype and at most `max_bytes` bytes each are
  concatenated into groups of at most `max_group` tensors (see
  `small_tensor_groups`); `f` reduces the groups and the other tensors; the
  groups are cut back.
* `with_float16_transfer(f)`: float32 tensors travel as float16.

Each is built from a `pack -> (packed, context)` / `unpack(reduced, context,
devices)` pair; the context travels with the data. Packing ops of tower d
are placed on `devices[d]`. Packing and unpacking are exact: unpacking the
packed tensors returns the original values bit for bit. Shapes must be fully
defined (`StaticShapeError` otherwise). Tensors with no elements are never
packed; they go to `f` as they are.

Graph cost, for T tensors on k towers packed into n packs: about 2 ops per
tensor and tower (a reshape in, unless the tensor is flat already, and one
out), plus per tower one concatenation and one split per pack, a split and
a join for each of the at most n - 1 tensors that straddle packs, and one
int32 constant per distinct shape or list of sizes; constants are shared
within a call, with the all-reduce it wraps included.
"""

import collections

import tensorflow as tf

from variable_mgr.allreduce import errors
from variable_mgr.allreduce import layout

# One concatenated block: the tensor indices it holds, their shapes and
# element counts, and the sizes of the pieces the block was cut into.
_Block = collections.namedtuple('_Block', ['indices', 'shapes', 'sizes',
                                           'pieces'])

PackContext = collections.namedtuple('PackContext', ['count', 'passed',
                                                     'blocks'])
PackContext.__doc__ = """How packed tensors map back to the originals:
`count` originals; `passed` original indices passed through unchanged
(first in the packed list, in this order); `blocks` the concatenated blocks,
whose pieces follow in order."""


def _check_int(name, value, minimum):
  if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
    raise errors.PackingOptionError(
        '%s must be an integer >= %d; got %r' % (name, minimum, value))


def _pack(towers, devices, blocks, passed, constants):
  """Each block's pieces, on every tower, built straight from the tensors:
  a piece concatenates the segments it holds (a tensor that straddles
  pieces is cut into its segments first), so no vector of the whole block
  is ever built."""
  segments = [_segments(block) for block in blocks]
  packed = [[row[i] for i in passed] for row in towers]
  for d, row in enumerate(towers):
    device = devices[d]
    for block, (per_piece, per_tensor) in zip(blocks, segments):
      pieces = [[None] * len(lengths) for lengths in per_piece]
      for i, positions in zip(block.indices, per_tensor):
        parts = layout.split(layout.flatten(row[i], device, constants),
                             [per_piece[p][s] for p, s in positions], device,
                             constants)
        for (p, s), part in zip(positions, parts):
          pieces[p][s] = part
      packed[d].extend(layout.concat(parts, device, constants)
                       for parts in pieces)
  return packed


def _segments(block):
  """Where each tensor of `block` lies in the block's pieces.

  Returns `(per_piece, per_tensor)`: `per_piece[p]` is the list of segment
  lengths that piece `p` is cut into, in order, and `per_tensor[t]` the list
  of `(piece, segment)` positions that tensor `t` of the block is joined
  from, in order.
  """
  per_piece = [[] for _ in block.pieces]
  per_tensor = []
  piece, used = 0, 0
  for size in block.sizes:
    positions = []
    while size:
      while used == block.pieces[piece]:
        piece, used = piece + 1, 0
      take = min(size, block.pieces[piece] - used)
      positions.append((piece, len(per_piece[piece])))
      per_piece[piece].append(take)
      used += take
      size -= take
    per_tensor.append(positions)
  return per_piece, per_tensor


def unpack(packed_tensors, context, devices):
  """Inverts `repack` or `aggregate_small_tensors` on every tower.

  Each piece is cut into the segments of the tensors it holds (no piece is
  joined to another first); a tensor that spans two or more pieces is joined
  from its segments, and every tensor takes back its shape.

  Args:
    packed_tensors: `[tower][packed tensor]`, e.g. the all-reduced packs.
    context: the `PackContext` the packing returned.
    devices: one device string per tower; unpacking ops go there.

  Returns:
    `[tower][tensor]` in the original order and shapes.
  """
  constants = layout.call_constants()
  segments = [_segments(block) for block in context.blocks]
  result = []
  for d, row in enumerate(packed_tensors):
    device = devices[d]
    row = list(row)
    out = [None] * context.count
    for i, value in zip(context.passed, row):
      out[i] = value
    position = len(context.passed)
    for block, (per_piece, per_tensor) in zip(context.blocks, segments):
      pieces = row[position:position + len(block.pieces)]
      position += len(block.pieces)
      cut = [layout.split(piece, lengths, device, constants)
             for piece, lengths in zip(pieces, per_piece)]
      for i, shape, positions in zip(block.indices, block.shapes, per_tensor):
        flat = layout.concat([cut[p][s] for p, s in positions], device,
                             constants)
        out[i] = layout.restore_shape(flat, shape, device, constants)
    result.append(out)
  return result


def _dtype_groups(tensors, indices):
  groups = collections.OrderedDict()
  for i in indices:
    groups.setdefault(tensors[i].dtype, []).append(i)
  return groups


def repack(tower_tensors, devices, num_packs):
  """Concatenates each tower's tensors per dtype and cuts them into packs.

  Args:
    tower_tensors: `[tower][tensor]`, fully defined shapes.
    devices: one device string per tower.
    num_packs: packs per dtype (fewer when there are fewer elements).

  Returns:
    `(packed, context)`: `[tower][pack]` and the `PackContext` for `unpack`.

  Raises:
    PackingOptionError: `num_packs` is not a positive integer.
  """
  _check_int('num_packs', num_packs, 1)
  towers, devices = layout.check_towers(tower_tensors, devices)
  first = towers[0] if towers else []
  blocks = []
  sizes = [layout.num_elements(t) for t in first]
  passed = [i for i, size in enumerate(sizes) if not size]
  packable = [i for i, size in enumerate(sizes) if size]
  for indices in _dtype_groups(first, packable).values():
    total = sum(sizes[i] for i in indices)
    pieces = layout.split_sizes(total, min(num_packs, total))
    blocks.append(_Block(tuple(indices), tuple(first[i].shape for i in indices),
                         tuple(sizes[i] for i in indices), tuple(pieces)))
  context = PackContext(len(first), tuple(passed), tuple(blocks))
  return (_pack(towers, devices, blocks, passed, layout.call_constants()),
          context)


def small_tensor_groups(tensors, max_bytes, max_group):
  """The groups `aggregate_small_tensors` concatenates, as index tuples.

  As tf_cnn_benchmarks' `pack_small_tensors`: a tensor is small when its
  shape is fully defined and it has at least one element and at most
  `max_bytes` bytes (`num_bytes <= max_bytes`: the bound is on each tensor,
  not on a group). Each run of consecutive small tensors of one dtype is cut,
  from its start, into groups of `max_group` tensors and a shorter last one;
  groups of one tensor are not groups. For example, with tensors of 4, 4,
  400, 4, 4, 4 bytes (float32), max_bytes=100 and max_group=2 the groups are
  (0, 1) and (3, 4); tensors 2 and 5 pass through.

  Args:
    tensors: one tower's tensors.
    max_bytes: int >= 0; 0 makes no groups.
    max_group: int >= 1; the most tensors in one group.

  Returns:
    A list of tuples of two or more consecutive indices, in order.

  Raises:
    PackingOptionError: a limit is out of range.
  """
  _check_int('max_bytes', max_bytes, 0)
  _check_int('max_group', max_group, 1)
  groups = []
  run = []

  def close_run():
    for start in range(0, len(run), max_group):
      group = tuple(run[start:start + max_group])
      if len(group) > 1:
        groups.append(group)
    del run[:]

  for i, t in enumerate(tensors):
    small = (max_bytes and t.shape.is_fully_defined()
             and 0 < layout.num_bytes(t) <= max_bytes)
    if run and (not small or t.dtype != tensors[run[-1]].dtype):
      close_run()
    if small:
      run.append(i)
  close_run()
  return groups


def aggregate_small_tensors(tower_tensors, devices, max_bytes, max_group):
  """Concatenates the `small_tensor_groups` of every tower.

  Args:
    tower_tensors: `[tower][tensor]`; small ones need fully defined shapes.
    devices: one device string per tower.
    max_bytes: int >= 0, the most bytes of a tensor that is packed; 0
      disables aggregation.
    max_group: int >= 1; the most tensors in one group.

  Returns:
    `(packed, context)`: `[tower][tensor]` (passed-through tensors first,
    then one flat tensor per group) and the `PackContext` for `unpack`.

  Raises:
    PackingOptionError: a limit is out of range.
  """
  _check_int('max_bytes', max_bytes, 0)
  _check_int('max_group', max_group, 1)
  towers, devices = layout.check_towers(tower_tensors, devices)
  first = towers[0] if towers else []
  groups = small_tensor_groups(first, max_bytes, max_group)
  grouped = set(i for group in groups for i in group)
  passed = [i for i in range(len(first)) if i not in grouped]
  blocks = []
  for group in groups:
    sizes = tuple(layout.num_elements(first[i]) for i in group)
    blocks.append(_Block(group, tuple(first[i].shape for i in group),
                         sizes, (sum(sizes),)))
  context = PackContext(len(first), tuple(passed), tuple(blocks))
  return (_pack(towers, devices, blocks, passed, layout.call_constants()),
          context)


def with_repacking(reduce_fn, num_packs):
  """`reduce_fn` applied to `num_packs` packs per dtype instead of to each
  tensor: `unpack(reduce_fn(repack(T, D, n)[0], D), context, D)`."""
  _check_int('num_packs', num_packs, 1)

  def repacked(tower_tensors, devices, **params):
    with layout.sharing_constants():
      packed, context = repack(tower_tensors, devices, num_packs)
      return unpack(reduce_fn(packed, devices, **params), context, devices)

  return repacked


def with_small_tensor_aggregation(reduce_fn, max_bytes, max_group):
  """`reduce_fn` applied after small tensors are grouped:
  `unpack(reduce_fn(aggregate_small_tensors(T, D, b, g)[0], D), context, D)`.
  """
  _check_int('max_bytes', max_bytes, 0)
  _check_int('max_group', max_group, 1)

  def aggregated(tower_tensors, devices, **params):
    with layout.sharing_constants():
      packed, context = aggregate_small_tensors(tower_tensors, devices,
                                                max_bytes, max_group)
      return unpack(reduce_fn(packed, devices, **params), context, devices)

  return aggregated


def with_float16_transfer(reduce_fn):
  """`reduce_fn` on float16 copies of the float32 tensors.

  Identity: for float32 tensors,
  `with_float16_transfer(f)(T, D)[d][i] == cast(f(cast(T, float16), D)[d][i],
  float32)`, each cast on the tower's device; other dtypes go to `f`
  unchanged. The sums are float16 sums: values beyond float16's range
  (65504) overflow, and precision is about three decimal digits.
  """

  def float16_transfer(tower_tensors, devices, **params):
    towers, devices = layout.check_towers(tower_tensors, devices)
    first = towers[0] if towers else []
    cast = [t.dtype == tf.float32 for t in first]
    narrowed = []
    for d, row in enumerate(towers):
      with tf.device(devices[d]):
        narrowed.append([tf.cast(t, tf.float16) if c else t
                         for t, c in zip(row, cast)])
    reduced = reduce_fn(narrowed, devices, **params)
    result = []
    for d, row in enumerate(reduced):
      with tf.device(devices[d]):
        result.append([tf.cast(t, tf.float32) if c else t
                       for t, c in zip(row, cast)])
    return result

  return float16_transfer
