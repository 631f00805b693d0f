"""The --all_reduce_spec grammar, its errors and the all-reduce it builds."""

import numpy as np
import pytest
import tensorflow as tf

from variable_mgr.allreduce import errors
from variable_mgr.allreduce import spec as spec_lib
from variable_mgr.allreduce.spec import SpecRange
from variable_mgr.allreduce.spec import Stage

import allreduce_testlib as testlib
import graph_walk


@pytest.mark.parametrize('text,expected', [
    ('xring', [SpecRange(None, (Stage('xring', None),))]),
    ('xring#2', [SpecRange(None, (Stage('xring', 2),))]),
    # One is the least count a stage takes.
    ('pscpu#1', [SpecRange(None, (Stage('pscpu', 1),))]),
    ('pscpu:32k:xring', [SpecRange(32768, (Stage('pscpu', None),)),
                         SpecRange(None, (Stage('xring', None),))]),
    ('psgpu#4:2M:nccl/xring#3:1G:collective', [
        SpecRange(2 << 20, (Stage('psgpu', 4),)),
        SpecRange(1 << 30, (Stage('nccl', None), Stage('xring', 3))),
        SpecRange(None, (Stage('collective', None),))]),
    ('copy:3K:rechd:2T:xring', [SpecRange(3 << 10, (Stage('copy', None),)),
                                SpecRange(2 << 40, (Stage('rechd', None),)),
                                SpecRange(None, (Stage('xring', None),))]),
    ('copy:100:rechd', [SpecRange(100, (Stage('copy', None),)),
                        SpecRange(None, (Stage('rechd', None),))]),
    ('hcopy', [SpecRange(None, (Stage('hcopy', None),))]),
])
def test_parse(text, expected):
  assert spec_lib.parse_spec(text) == expected


# One case per grammar error: spec, bad token, position, words of the reason.
GRAMMAR_ERRORS = [
    ('', '', 0, 'algorithm name, one of: collective, copy'),
    ('xrng', 'xrng', 0, 'one of: collective, copy, hcopy, nccl, pscpu'),
    ('pscpu:32k:XRING', 'XRING', 10, 'algorithm name'),
    ('xring#', '', 6, 'positive integer'),
    ('xring#two', 'two', 6, 'positive integer'),
    ('xring#0', '0', 6, 'positive integer'),
    ('rechd#2', '#2', 5, "'rechd' takes no \"#count\""),
    ('collective#2', '#2', 10,
     "'collective' takes no \"#count\"; only pscpu, psgpu, xring do"),
    ('copy#2', '#2', 4,
     "'copy' takes no \"#count\"; only pscpu, psgpu, xring do"),
    ('hcopy#2', '#2', 5,
     "'hcopy' takes no \"#count\"; only pscpu, psgpu, xring do"),
    ('nccl#2', '#2', 4,
     "'nccl' takes no \"#count\"; only pscpu, psgpu, xring do"),
    ('pscpu:32q:xring', '32q', 6, 'suffix k or K (x1024), M, G or T'),
    ('pscpu:0:xring', '0', 6, 'positive element count'),
    ('pscpu:-1:xring', '-1', 6, 'positive element count'),
    ('pscpu:1.5k:xring', '1.5k', 6, 'positive element count'),
    ('pscpu:32KB:xring', '32KB', 6, 'suffix k or K (x1024), M, G or T'),
    # Upstream's suffixes: only k has a lower-case form.
    ('pscpu:2m:xring', '2m', 6, "write '2M' (M, G and T are upper case)"),
    ('pscpu:1g:xring', '1g', 6, "write '1G'"),
    ('pscpu:1t:xring', '1t', 6, "write '1T'"),
    ('pscpu:32k', '32k', 6, 'must be followed by ":" and an algorithm'),
    ('pscpu:32k:', '', 10, 'algorithm name'),
    ('pscpu:64k:copy:32k:xring', '32k', 15, 'increase strictly'),
    ('nccl/xring/pscpu', '/pscpu', 10, 'at most two stages'),
    ('nccl/', '', 5, 'algorithm name'),
    (None, None, 0, 'must be a string'),
]


@pytest.mark.parametrize('text,token,position,reason', GRAMMAR_ERRORS)
def test_grammar_error_points_at_token(text, token, position, reason):
  with pytest.raises(errors.AllReduceSpecError) as info:
    spec_lib.parse_spec(text)
  error = info.value
  assert (error.token, error.position) == (token, position)
  assert reason in str(error)
  assert '%r at position %d' % (token, position) in str(error)
  assert repr(text) in str(error)


def test_bad_spec_fails_before_building():
  with pytest.raises(errors.AllReduceSpecError):
    spec_lib.all_reduce_fn('xring:')


# Every name on three towers (the algorithms have their own full matrix),
# compound specs on every tested tower count.
SPEC_CASES = ([(text, 3) for text in ['xring', 'pscpu', 'pscpu#3', 'psgpu#2',
                                      'rechd', 'hcopy', 'copy', 'collective',
                                      'rechd/copy']]
              # SHAPES hold 0, 1, 7, 15, 41 and 48 elements.
              + [(text, k) for text in ['xring#2', 'pscpu:15:xring',
                                        'copy:7:rechd:41:xring#2',
                                        'xring/pscpu']
                 for k in (1, 2, 3, 5, 8)])


@pytest.mark.parametrize('text,k', SPEC_CASES)
def test_spec_sums(text, k):
  devices = testlib.cpu_devices(k)
  arrays = testlib.random_arrays(k, k, np.float32)
  outputs, values = testlib.build_and_run(spec_lib.all_reduce_fn(text),
                                          arrays, devices)
  testlib.assert_sums(arrays, outputs, values, devices)


def _routes(text, shapes, dtype=tf.float32, k=3):
  """The algorithm (its name scope) that takes each tensor, from the graph
  only: placeholders allocate nothing, so shapes may be huge."""
  devices = testlib.cpu_devices(k)
  with tf.Graph().as_default():
    inputs = [[tf.compat.v1.placeholder(dtype, s) for s in shapes]
              for _ in devices]
    outputs = spec_lib.build_all_reduce(text, inputs, devices)
  return [t.name.split('/')[0] for t in outputs[1]]


COPY, SHUFFLE = 'copy_all_reduce', 'shuffle_all_reduce'


# Upstream's split_grads_by_size: num_elements <= limit takes the range.
@pytest.mark.parametrize('limit_text,limit', [
    ('1', 1), ('100', 100), ('1k', 1 << 10), ('1K', 1 << 10),
    ('32k', 32 << 10), ('3K', 3 << 10), ('1M', 1 << 20), ('5M', 5 << 20),
    ('1G', 1 << 30), ('2G', 2 << 30), ('1T', 1 << 40), ('3T', 3 << 40)])
def test_limit_counts_elements_and_includes_its_value(limit_text, limit):
  # copy and one-piece pscpu cut nothing, so no size constant limits the
  # shapes: G and T limits are checked at their own element counts.
  shapes = [(limit,), (limit + 1,), (1,), (limit - 1,)]
  assert _routes('copy:%s:pscpu' % limit_text, shapes) == [
      COPY, SHUFFLE, COPY, COPY]


def test_limit_is_elements_whatever_the_dtype():
  # 32768 float64 elements are 256 KiB, eight times "32k", and still in.
  for dtype in (tf.float16, tf.float32, tf.float64, tf.int32):
    assert _routes('copy:32k:pscpu', [(32768,), (32769,), (128, 256),
                                      (2, 128, 129)], dtype) == [
                                          COPY, SHUFFLE, COPY, SHUFFLE]


def test_three_ranges_route_at_each_limit():
  shapes = [(), (0,), (15,), (16,), (4, 4), (17,), (40,), (41,), (42,)]
  assert _routes('copy:16:rechd:41:xring', shapes) == (
      [COPY] * 5 + ['halving_doubling_all_reduce'] * 3 + ['ring_all_reduce'])


def test_32k_example_sums_at_the_limit():
  """'pscpu:32k:xring' as in upstream's help: 32768 elements go to pscpu,
  32769 around the ring; both sums are right."""
  devices = testlib.cpu_devices(2)
  arrays = testlib.random_arrays(3, 2, np.float32,
                                 shapes=[(32768,), (32769,), (128, 256)])
  outputs, values = testlib.build_and_run(
      spec_lib.all_reduce_fn('pscpu:32k:xring'), arrays, devices)
  assert [t.name.split('/')[0] for t in outputs[0]] == [
      SHUFFLE, 'ring_all_reduce', SHUFFLE]
  testlib.assert_sums(arrays, outputs, values, devices)


def test_pscpu_sums_on_worker_cpu_by_default():
  devices = testlib.cpu_devices(3)[1:]
  with tf.Graph().as_default() as graph:
    inputs = [[tf.zeros([4])] for _ in devices]
    spec_lib.build_all_reduce('pscpu', inputs, devices)
    sums = [op for op, _ in graph_walk.sums(graph)]
  assert [testlib.layout.device_key(op.device) for op in sums] == [
      testlib.layout.device_key('/cpu:0')]


def test_two_stages_across_workers_graph():
  # Two workers with two towers each: the inner stage stays on each
  # worker, the outer stage reduces one tower per worker.
  devices = ['/job:worker/replica:0/task:%d/device:CPU:%d' % (w, c)
             for w in (0, 1) for c in (1, 2)]
  with tf.Graph().as_default() as graph:
    inputs = [[tf.zeros([6]), tf.zeros([6])] for _ in devices]
    outputs = spec_lib.build_all_reduce('copy/pscpu', inputs, devices)
    sums = graph_walk.sums(graph)
  for d, row in enumerate(outputs):
    for t in row:
      assert (testlib.layout.device_key(t.device)
              == testlib.layout.device_key(devices[d]))
  # Per tensor: one inner sum on each worker; the outer shuffle cuts it in
  # two pieces, one summed on each worker's CPU from one value per worker.
  outer = [(op, terms) for op, terms in sums if 'CPU:0' in op.device]
  assert len(sums) == 2 * 2 + 2 * 2
  assert sorted(testlib.layout.worker_of(op.device)[2]
                for op, _ in outer) == [0, 0, 1, 1]
  for op, terms in outer:
    workers = sorted(testlib.layout.worker_of(x.device) for x in terms)
    assert [w[2] for w in workers] == [0, 1]
