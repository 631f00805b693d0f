"""Packing: exact round trips, group limits and the three wrappers."""

import collections

import numpy as np
import pytest
import tensorflow as tf

from variable_mgr.allreduce import algorithms
from variable_mgr.allreduce import errors
from variable_mgr.allreduce import packing

import allreduce_testlib as testlib

MIXED_SHAPES = [(), (0,), (3, 5), (7,), (1,), (2, 0), (4, 4, 3), (11,)]
MIXED_DTYPES = [np.float32, np.float16, np.float32, np.float64, np.int32,
                np.float32, np.float16, np.float32]


def _mixed_arrays(seed, k):
  rng = np.random.RandomState(seed)
  return [[(rng.standard_normal(s) * 100).astype(t)
           for s, t in zip(MIXED_SHAPES, MIXED_DTYPES)] for _ in range(k)]


def _round_trip(pack, arrays, devices):
  def pack_then_unpack(inputs, devices):
    packed, context = pack(inputs, devices)
    return packing.unpack(packed, context, devices)
  return testlib.build_and_run(pack_then_unpack, arrays, devices)


@pytest.mark.parametrize('num_packs', [1, 3, 1000])
def test_repack_round_trip_is_exact(num_packs):
  devices = testlib.cpu_devices(2)
  arrays = _mixed_arrays(num_packs, 2)
  outputs, values = _round_trip(
      lambda t, d: packing.repack(t, d, num_packs), arrays, devices)
  for d in range(2):
    for i, expected in enumerate(arrays[d]):
      assert values[d][i].dtype == expected.dtype
      np.testing.assert_array_equal(values[d][i], expected)
      assert outputs[d][i].shape == expected.shape


@pytest.mark.parametrize('max_bytes,max_group', [(0, 4), (64, 2), (10 ** 6, 3)])
def test_small_tensor_round_trip_is_exact(max_bytes, max_group):
  devices = testlib.cpu_devices(2)
  arrays = _mixed_arrays(max_group, 2)
  _, values = _round_trip(
      lambda t, d: packing.aggregate_small_tensors(t, d, max_bytes,
                                                   max_group),
      arrays, devices)
  for d in range(2):
    for i, expected in enumerate(arrays[d]):
      assert values[d][i].dtype == expected.dtype
      np.testing.assert_array_equal(values[d][i], expected)


def test_repack_packs_per_dtype():
  with tf.Graph().as_default():
    tensors = [tf.zeros(s, t) for s, t in zip(MIXED_SHAPES, MIXED_DTYPES)]
    packed, context = packing.repack([tensors], ['/cpu:0'], 4)
  # The two empty tensors pass first, as they are; then, in the order of
  # each dtype's first packed tensor, float32: 1 + 15 + 11 elements in 4
  # packs; float64: 7 in 4; int32: 1 element in 1 pack; float16: 48 in 4.
  sizes = [(t.dtype, t.shape.num_elements()) for t in packed[0]]
  assert context.passed == (1, 5)
  assert sizes == ([(tf.float16, 0), (tf.float32, 0)]
                   + [(tf.float32, 7)] * 3 + [(tf.float32, 6)]
                   + [(tf.float64, 2)] * 3 + [(tf.float64, 1)]
                   + [(tf.int32, 1)]
                   + [(tf.float16, 12)] * 4)
  assert context.count == len(tensors)


# One tower's tensors for the small-tensor grouping, with max_bytes=40 and
# max_group=3: (shape, dtype, bytes, what happens).
SMALL_CASE = [
    ((1,), np.float32),      # 0:  4 B  small, run A
    ((10,), np.float32),     # 1: 40 B  small (== max_bytes), run A
    ((11,), np.float32),     # 2: 44 B  large: ends run A
    ((2,), np.float32),      # 3:  8 B  run B
    ((3,), np.float32),      # 4: 12 B  run B
    ((2, 2), np.float32),    # 5: 16 B  run B (a full group of 3: 3, 4, 5)
    ((5,), np.float32),      # 6: 20 B  run B's tail of one: passes
    ((0,), np.float32),      # 7: empty, never packed: ends run B
    ((6,), np.float32),      # 8: 24 B  a run of one: passes
    ((20,), np.float16),     # 9: 40 B  a new dtype starts run C
    ((), np.float16),        # 10: 2 B  run C
    ((7,), np.float32),      # 11: 28 B a new dtype starts run D
    ((8,), np.float32),      # 12: 32 B run D
    ((9,), np.float32),      # 13: 36 B run D: 96 B in all, above max_bytes
]
SMALL_GROUPS = [(0, 1), (3, 4, 5), (9, 10), (11, 12, 13)]
SMALL_PASSED = (2, 6, 7, 8)


def _small_case_tensors():
  return [tf.zeros(shape, dtype) for shape, dtype in SMALL_CASE]


def test_small_tensor_groups_are_upstreams_runs():
  """Each tensor of at most max_bytes is small (the bound is per tensor, as
  upstream's `4 * num_elements <= max_bytes`); consecutive small tensors of
  one dtype are cut into groups of max_group."""
  with tf.Graph().as_default():
    tensors = _small_case_tensors()
    assert packing.small_tensor_groups(tensors, 40, 3) == SMALL_GROUPS
    _, context = packing.aggregate_small_tensors([tensors], ['/cpu:0'], 40,
                                                 3)
  assert [b.indices for b in context.blocks] == SMALL_GROUPS
  assert context.passed == SMALL_PASSED
  # A group may hold more than max_bytes: 28 + 32 + 36 bytes.
  assert sum(context.blocks[-1].sizes) * 4 == 96


@pytest.mark.parametrize('max_bytes,max_group,groups', [
    (0, 10, []),                                   # off
    (35, 3, [(3, 4, 5), (11, 12)]),                # 1, 9 and 13 too large
    (4, 10, []),                                   # no two 4-byte neighbours
    (44, 2, [(0, 1), (2, 3), (4, 5), (9, 10), (11, 12)]),
    (44, 1, []),                                   # groups of one are none
    (1000, 100, [tuple(range(0, 7)), (9, 10), (11, 12, 13)]),
])
def test_small_tensor_groups_by_limits(max_bytes, max_group, groups):
  with tf.Graph().as_default():
    assert packing.small_tensor_groups(_small_case_tensors(), max_bytes,
                                       max_group) == groups


def test_small_tensor_groups_keep_max_group():
  """Twelve consecutive 256-byte tensors with max_group=10 make a group of
  10 and one of 2 (upstream's extract_ranges would make one of 12); the
  group holds 10 x 256 bytes though max_bytes is 256."""
  with tf.Graph().as_default():
    tensors = [tf.zeros([64]) for _ in range(12)] + [tf.zeros([65])]
    assert packing.small_tensor_groups(tensors, 256, 10) == [
        tuple(range(10)), (10, 11)]


def test_small_tensor_aggregation_sums_and_what_is_reduced():
  """The all-reduce gets the passed tensors, then one flat tensor a group;
  every tower's result is the NumPy sum."""
  k = 3
  devices = testlib.cpu_devices(k)
  rng = np.random.RandomState(5)
  arrays = [[rng.uniform(-1, 1, shape).astype(dtype)
             for shape, dtype in SMALL_CASE] for _ in range(k)]
  seen = []

  def recording_copy(tower_tensors, devices):
    seen.append([(t.dtype.name, t.shape.as_list()) for t in tower_tensors[0]])
    return algorithms.copy(tower_tensors, devices)

  fn = packing.with_small_tensor_aggregation(recording_copy, 40, 3)
  outputs, values = testlib.build_and_run(fn, arrays, devices)
  assert seen == [[('float32', [11]), ('float32', [5]), ('float32', [0]),
                   ('float32', [6]),
                   ('float32', [1 + 10]), ('float32', [2 + 3 + 4]),
                   ('float16', [20 + 1]), ('float32', [7 + 8 + 9])]]
  testlib.assert_sums(arrays, outputs, values, devices)


WRAPPED = {
    'repack_ring': lambda: packing.with_repacking(algorithms.ring, 3),
    'repack_rechd': lambda: packing.with_repacking(
        algorithms.halving_doubling, 2),
    'small_copy': lambda: packing.with_small_tensor_aggregation(
        algorithms.copy, 256, 3),
    # max_group=1, the least allowed: every group is one tensor.
    'small_copy_singles': lambda: packing.with_small_tensor_aggregation(
        algorithms.copy, 256, 1),
    'small_of_repack': lambda: packing.with_small_tensor_aggregation(
        packing.with_repacking(algorithms.ring, 2), 64, 4),
}


@pytest.mark.parametrize('name', sorted(WRAPPED))
@pytest.mark.parametrize('k', [1, 3, 5])
def test_wrapped_all_reduce_sums(name, k):
  devices = testlib.cpu_devices(k)
  arrays = testlib.random_arrays(k, k, np.float32)
  outputs, values = testlib.build_and_run(WRAPPED[name](), arrays, devices)
  testlib.assert_sums(arrays, outputs, values, devices)


def test_float16_transfer_identity():
  k = 3
  devices = testlib.cpu_devices(k)
  arrays = testlib.random_arrays(1, k, np.float32)
  for row in arrays:
    row.append(np.arange(4, dtype=np.float64))

  def both(inputs, devices):
    wrapped = packing.with_float16_transfer(algorithms.ring)(inputs, devices)
    narrowed = [[tf.cast(t, tf.float16) if t.dtype == tf.float32 else t
                 for t in row] for row in inputs]
    reference = [[tf.cast(t, tf.float32) if t.dtype == tf.float16 else t
                  for t in row]
                 for row in algorithms.ring(narrowed, devices)]
    return [w + r for w, r in zip(wrapped, reference)]

  outputs, values = testlib.build_and_run(both, arrays, devices)
  count = len(arrays[0])
  for d in range(k):
    for i in range(count):
      assert values[d][i].dtype == arrays[d][i].dtype
      np.testing.assert_array_equal(values[d][i], values[d][count + i])
      assert (testlib.layout.device_key(outputs[d][i].device)
              == testlib.layout.device_key(devices[d]))
      np.testing.assert_allclose(
          values[d][i], sum(row[i] for row in arrays), rtol=2e-3,
          atol=3e-3 * k)


@pytest.mark.parametrize('call,match', [
    (lambda: packing.with_repacking(algorithms.ring, 0), 'num_packs'),
    (lambda: packing.with_repacking(algorithms.ring, 2.5), 'num_packs'),
    (lambda: packing.with_small_tensor_aggregation(algorithms.ring, -1, 2),
     'max_bytes'),
    (lambda: packing.with_small_tensor_aggregation(algorithms.ring, 10, 0),
     'max_group'),
    (lambda: packing.small_tensor_groups([], 10, 0), 'max_group'),
    (lambda: packing.small_tensor_groups([], None, 2), 'max_bytes'),
])
def test_bad_option_is_refused(call, match):
  with pytest.raises(errors.PackingOptionError, match=match):
    call()


def test_unknown_shape_is_refused():
  with tf.Graph().as_default():
    x = tf.compat.v1.placeholder(tf.float32, [None])
    with pytest.raises(errors.StaticShapeError):
      packing.repack([[x]], ['/cpu:0'], 2)


def test_tensor_spanning_every_pack_round_trips():
  # 45 float32 elements in packs of 12, 11, 11 and 11: the 40-element tensor
  # (offsets 2..41) lies in all four packs, the last one in one.
  devices = testlib.cpu_devices(2)
  arrays = testlib.random_arrays(7, 2, np.float32,
                                 shapes=[(2,), (5, 8), (3,)])
  _, values = _round_trip(lambda t, d: packing.repack(t, d, 4), arrays,
                          devices)
  for d in range(2):
    for got, expected in zip(values[d], arrays[d]):
      np.testing.assert_array_equal(got, expected)


def _ops_by_device(graph, before):
  ops = collections.defaultdict(list)
  for op in graph.get_operations()[before:]:
    ops[testlib.layout.device_key(op.device)].append(op)
  return ops


def _segment_lengths(sizes, num_packs):
  """Per pack, the lengths of the tensor segments it holds; per tensor, the
  lengths of its segments: tensors laid end to end, cut into packs of
  nearly equal size."""
  total = sum(sizes)
  pack_sizes = [total // num_packs + (1 if p < total % num_packs else 0)
                for p in range(num_packs)]
  pack_starts = np.cumsum([0] + pack_sizes)
  starts = np.cumsum([0] + list(sizes))
  per_pack = [[] for _ in pack_sizes]
  per_tensor = [[] for _ in sizes]
  for t, (a, b) in enumerate(zip(starts, starts[1:])):
    for p, (c, e) in enumerate(zip(pack_starts, pack_starts[1:])):
      length = min(b, e) - max(a, c)
      if length > 0:
        per_pack[p].append(int(length))
        per_tensor[t].append(int(length))
  return per_pack, per_tensor


@pytest.mark.parametrize('num_packs', [1, 4])
def test_repacking_graph_cost(num_packs):
  """Per tower: a reshape in and out for each tensor that is not flat; to
  pack, a split of each tensor that straddles packs and a concatenation per
  pack; to unpack, a split per pack and a join per straddling tensor; each
  constant once."""
  shapes = [(1,), (4, 4, 3), (11,), (7,), (3, 5), (8, 4, 2), (5,)]
  per_pack, per_tensor = _segment_lengths([int(np.prod(s)) for s in shapes],
                                          num_packs)
  straddlers = [lengths for lengths in per_tensor if len(lengths) > 1]
  cut_packs = [lengths for lengths in per_pack if len(lengths) > 1]
  if num_packs == 4:
    # 151 elements in packs of 38, 38, 38, 37: three tensors straddle.
    assert (len(straddlers), len(cut_packs)) == (3, 4)
  not_flat = [s for s in shapes if len(s) != 1]
  expected_consts = ({(-1,), (0,)} | set(tuple(x) for x in straddlers)
                     | set(tuple(x) for x in cut_packs) | set(not_flat))
  k = 3
  devices = testlib.cpu_devices(k)
  with tf.Graph().as_default() as graph:
    inputs = []
    for device in devices:
      with tf.device(device):
        inputs.append([tf.compat.v1.placeholder(tf.float32, s)
                       for s in shapes])
    before = len(graph.get_operations())
    packing.with_repacking(lambda t, d: t, num_packs)(inputs, devices)
    by_device = _ops_by_device(graph, before)
  assert sorted(by_device) == sorted(testlib.layout.device_key(d)
                                     for d in devices)
  for device, ops in by_device.items():
    types = collections.Counter(op.type for op in ops)
    consts = [tuple(np.ravel(tf.make_ndarray(op.get_attr('value'))))
              for op in ops if op.type == 'Const']
    assert sorted(consts) == sorted(expected_consts), device
    assert types == collections.Counter(
        Reshape=2 * len(not_flat),
        ConcatV2=len(cut_packs) + len(straddlers),
        SplitV=len(straddlers) + len(cut_packs),
        Const=len(expected_consts)), device


def test_wrapper_and_all_reduce_share_constants():
  """A repacked ring's towers hold each int32 constant once: the packing,
  the ring and the unpacking share them."""
  devices = testlib.cpu_devices(3)
  with tf.Graph().as_default() as graph:
    inputs = []
    for device in devices:
      with tf.device(device):
        inputs.append([tf.compat.v1.placeholder(tf.float32, s)
                       for s in [(4, 3), (5,), (2, 2, 2)]])
    before = len(graph.get_operations())
    packing.with_repacking(algorithms.ring, 1)(inputs, devices)
    by_device = _ops_by_device(graph, before)
  for device, ops in by_device.items():
    consts = [tuple(np.ravel(tf.make_ndarray(op.get_attr('value'))))
              for op in ops if op.type == 'Const']
    # -1, the axis 0, the unpacking sizes, the ring's chunk sizes, and the
    # two shapes that are not flat.
    assert len(consts) == len(set(consts)) == 6, (device, consts)
