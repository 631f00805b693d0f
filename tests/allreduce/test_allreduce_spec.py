"""The --all_reduce_spec grammar, its errors and the all-reduce it builds."""

import numpy as np
import pytest
import tensorflow as tf

from variable_mgr.allreduce import errors
from variable_mgr.allreduce import spec as spec_lib
from variable_mgr.allreduce.spec import SpecRange
from variable_mgr.allreduce.spec import Stage

import allreduce_testlib as testlib


@pytest.mark.parametrize('text,expected', [
    ('xring', [SpecRange(None, (Stage('xring', None),))]),
    ('xring#2', [SpecRange(None, (Stage('xring', 2),))]),
    ('pscpu:32k:xring', [SpecRange(32768, (Stage('pscpu', None),)),
                         SpecRange(None, (Stage('xring', None),))]),
    ('psgpu#4:2m:nccl/xring#3:1g:collective', [
        SpecRange(2 << 20, (Stage('psgpu', 4),)),
        SpecRange(1 << 30, (Stage('nccl', None), Stage('xring', 3))),
        SpecRange(None, (Stage('collective', None),))]),
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
    ('pscpu:32q:xring', '32q', 6, 'k, m or g suffix'),
    ('pscpu:0:xring', '0', 6, 'positive byte count'),
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
              + [(text, k) for text in ['xring#2', 'pscpu:64:xring',
                                        'copy:16:rechd:160:xring#2',
                                        'xring/pscpu']
                 for k in (1, 2, 3, 5, 8)])


@pytest.mark.parametrize('text,k', SPEC_CASES)
def test_spec_sums(text, k):
  devices = testlib.cpu_devices(k)
  arrays = testlib.random_arrays(k, k, np.float32)
  outputs, values = testlib.build_and_run(spec_lib.all_reduce_fn(text),
                                          arrays, devices)
  testlib.assert_sums(arrays, outputs, values, devices)


def test_size_ranges_route_by_bytes():
  devices = testlib.cpu_devices(3)
  shapes = [(), (15,), (16,), (40,), (41,)]  # 4, 60, 64, 160, 164 bytes
  with tf.Graph().as_default():
    inputs = [[tf.zeros(s) for s in shapes] for _ in devices]
    outputs = spec_lib.build_all_reduce('copy:64:rechd:161:xring', inputs,
                                        devices)
  scopes = [t.name.split('/')[0] for t in outputs[1]]
  assert scopes == ['copy_all_reduce', 'copy_all_reduce',
                    'halving_doubling_all_reduce',
                    'halving_doubling_all_reduce', 'ring_all_reduce']


def test_pscpu_sums_on_worker_cpu_by_default():
  devices = testlib.cpu_devices(3)[1:]
  with tf.Graph().as_default() as graph:
    inputs = [[tf.zeros([4])] for _ in devices]
    spec_lib.build_all_reduce('pscpu', inputs, devices)
    sums = [op for op in graph.get_operations() if op.type == 'AddN']
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
    add_ns = [op for op in graph.get_operations() if op.type == 'AddN']
  for d, row in enumerate(outputs):
    for t in row:
      assert (testlib.layout.device_key(t.device)
              == testlib.layout.device_key(devices[d]))
  # Per tensor: one inner sum on each worker; the outer shuffle cuts it in
  # two pieces, one summed on each worker's CPU from one value per worker.
  outer = [op for op in add_ns if 'CPU:0' in op.device]
  assert len(add_ns) == 2 * 2 + 2 * 2
  assert sorted(testlib.layout.worker_of(op.device)[2] for op in outer) == [
      0, 0, 1, 1]
  for op in outer:
    workers = sorted(testlib.layout.worker_of(x.device) for x in op.inputs)
    assert [w[2] for w in workers] == [0, 1]
