"""benchmarks/trace_timeline.py: a worker's Chrome trace read back into the
times of its forward and backward pass, its all-reduces and its fetches
from peers, against a trace written here with known times."""

import json

import scriptlib


def _script():
  return scriptlib.load('trace_timeline')


def _event(start_ms, dur_ms, name, op):
  # TensorFlow's timeline: microseconds; an RPC's op is 'unknown'.
  return {'ph': 'X', 'ts': 5e6 + start_ms * 1000, 'dur': dur_ms * 1000,
          'name': op, 'pid': 1, 'tid': 0, 'args': {'name': name, 'op': op}}


def test_the_timeline_of_a_step(tmp_path):
  trace = {'traceEvents': [
      {'ph': 'M', 'name': 'process_name', 'pid': 1},
      _event(0.0, 1.0, 'v0/tower_0/conv/Conv2D', 'Conv2D'),
      # The L2 loss's gradient needs only the weights: not the backward
      # pass's start.
      _event(0.5, 0.5, 'v0/tower_0/gradients/L2Loss_grad/mul', 'Mul'),
      _event(1.0, 1.0, 'RecvTensor', 'unknown'),
      _event(2.0, 8.0, 'v0/tower_0/xentropy',
             'SparseSoftmaxCrossEntropyWithLogits'),
      _event(10.0, 20.0, 'v0/tower_0/gradients/conv/Conv2D_grad/f',
             'Conv2DBackpropFilter'),
      _event(15.0, 40.0, 'collective_all_reduce/CollectiveReduce',
             'CollectiveReduce'),
      _event(30.0, 30.0, 'collective_all_reduce/CollectiveReduce_1',
             'CollectiveReduce'),
      # Fetches overlapping in 20-30 and 25-40, one alone in 50-60:
      # in flight 20 + 10 ms.
      _event(20.0, 10.0, 'RecvBuf', 'unknown'),
      _event(25.0, 15.0, 'RecvBuf', 'unknown'),
      _event(50.0, 10.0, 'RecvBuf', 'unknown'),
      _event(60.0, 2.0, 'v0/GradientDescent/update', 'ApplyGradientDescent'),
  ]}
  path = str(tmp_path / 't.worker0.json')
  with open(path, 'w') as f:
    json.dump(trace, f)
  script = _script()
  s = script.summary(script.events(path))
  assert s['end'] == 62.0
  assert s['loss_end'] == 10.0
  assert s['backward'] == (10.0, 30.0)
  assert s['collectives'] == [
      (15.0, 55.0, 'collective_all_reduce/CollectiveReduce'),
      (30.0, 60.0, 'collective_all_reduce/CollectiveReduce_1')]
  assert s['transfers'] == {'RecvBuf': (20.0, 60.0, 30.0, 3),
                            'RecvTensor': (1.0, 2.0, 1.0, 1)}
  assert script.lines(path, s)[:3] == [
      '%s: the step ends at 62.0 ms' % path,
      '  forward pass: the loss at 10.0 ms',
      '  backward pass: 10.0 to 30.0 ms']


def test_busy_is_the_union_of_spans():
  busy = _script().busy
  assert busy([]) == 0.0
  assert busy([(0.0, 10.0), (5.0, 8.0), (20.0, 25.0), (24.0, 30.0)]) == 20.0
