"""The benchmark scripts' measurement: rotation of rounds, ratios and their
spread, the worker process protocol."""

import os
import textwrap
import time

import pytest

from variable_mgr.benchmark.reports import measure


def test_rounds_rotate_the_order_and_time_every_candidate():
  calls = []
  steps = dict((name, (lambda n=name: calls.append(n))) for name in 'abc')
  times = measure.interleaved_rounds(steps, rounds=4, steps=2, warmup=1)
  assert list(times) == ['a', 'b', 'c']
  assert [len(t) for t in times.values()] == [4, 4, 4]
  assert all(t >= 0 for ts in times.values() for t in ts)
  warm, timed = calls[:3], calls[3:]
  assert warm == ['a', 'b', 'c']
  # Two calls a candidate and round, in the order rotated by the round.
  assert timed == ['a', 'a', 'b', 'b', 'c', 'c',
                   'b', 'b', 'c', 'c', 'a', 'a',
                   'c', 'c', 'a', 'a', 'b', 'b',
                   'a', 'a', 'b', 'b', 'c', 'c']


def test_a_step_time_is_the_mean_of_the_steps_wall_time(monkeypatch):
  """On a clock of the test's own, that starts far from zero as
  perf_counter's may: step k takes k tenths of a second."""
  clock = [5000.0]
  monkeypatch.setattr(measure.time, 'perf_counter', lambda: clock[0])
  taken = iter([0.1, 0.2, 0.3, 0.4])

  def step():
    clock[0] += next(taken)

  assert measure.time_steps(step, 4) == pytest.approx(0.25, rel=1e-9)


def test_rounds_refuse_zero_rounds_or_steps():
  with pytest.raises(ValueError, match='rounds=0'):
    measure.interleaved_rounds({'a': lambda: None}, rounds=0, steps=1)
  with pytest.raises(ValueError, match='steps=0'):
    measure.interleaved_rounds({'a': lambda: None}, rounds=1, steps=0)


def test_ratios_pair_the_same_round():
  times = {'x': [2.0, 3.0, 8.0], 'ref': [1.0, 2.0, 4.0]}
  assert measure.ratios(times, 'x', 'ref') == [2.0, 1.5, 2.0]
  s = measure.ratio_spread(times, 'x', 'ref')
  assert (s.median, s.low, s.high, s.rounds) == (2.0, 1.5, 2.0, 3)
  assert s.count_above(1.75) == 2
  with pytest.raises(ValueError, match='same round'):
    measure.ratios({'x': [1.0], 'ref': [1.0, 2.0]}, 'x', 'ref')


def test_spread_of_an_even_count_is_the_middle_mean():
  s = measure.spread([4, 1, 3, 2])
  assert (s.median, s.low, s.high) == (2.5, 1.0, 4.0)
  with pytest.raises(ValueError, match='at least one round'):
    measure.spread([])


def test_no_gc_disables_collection_inside_only():
  assert measure.gc.isenabled()
  with measure.no_gc():
    assert not measure.gc.isenabled()
    with measure.no_gc():
      assert not measure.gc.isenabled()
    assert not measure.gc.isenabled()
  assert measure.gc.isenabled()


def test_script_args():
  args, given = measure.script_args('d', 'q', ['--quick', '--output', 'x.md'])
  assert args.quick and args.output == 'x.md' and args.worker is None
  assert given == ['--quick', '--output', 'x.md']


def _script(tmp_path, body):
  path = tmp_path / 'script.py'
  path.write_text(textwrap.dedent('''\
      import sys
      from variable_mgr.benchmark.reports import measure

      def add(a, b):
        %s

      if __name__ == '__main__':
        measure.worker_main({'add': add}, sys.argv[2])
      ''') % body)
  return str(path)


def test_a_worker_process_returns_its_result(tmp_path):
  lines = []
  body = 'return {"sum": a + sum(b), "pid": __import__("os").getpid()}'
  result = measure.run_in_subprocess(_script(tmp_path, body), lines.append,
                                     hidden=('b',), task='add', a=2, b=[40])
  assert result['sum'] == 42
  assert result['pid'] != os.getpid()
  assert len(lines) == 1
  assert 'task=add a=2' in lines[0] and 'b=' not in lines[0]


def test_a_failing_worker_raises_with_its_status(tmp_path, capfd):
  with pytest.raises(RuntimeError, match='failed with status 1'):
    measure.run_in_subprocess(
        _script(tmp_path, 'raise ValueError("bad input %r" % a)'),
        lambda line: None, task='add', a=7, b=0)
  assert 'bad input 7' in capfd.readouterr().err


def test_resident_bytes_grow_with_an_allocation(tmp_path):
  """In a fresh worker process, as the benchmarks measure. Inside the
  suite's own long-lived process the resident set did not grow with this
  block in two TF 1.15 runs of the whole suite (it does when the test runs
  alone), so the test does not depend on what that process allocated and
  freed before."""
  body = textwrap.dedent('''\
      before = measure.resident_bytes()
      block = bytearray(64 * 1024 * 1024)
      block[::4096] = b'x' * len(block[::4096])
      return {"before": before, "after": measure.resident_bytes(),
                "peak": measure.peak_resident_bytes()}''').replace(
                    '\n', '\n  ')
  result = measure.run_in_subprocess(_script(tmp_path, body),
                                     lambda line: None, task='add', a=0, b=0)
  assert result['after'] - result['before'] > 32 * 1024 * 1024
  # The peak (ru_maxrss) is updated lazily: it lags the last pages a little.
  assert result['peak'] > result['before'] + 32 * 1024 * 1024


def test_package_root_holds_the_package():
  assert os.path.isfile(os.path.join(measure.PACKAGE_ROOT, 'variable_mgr',
                                     '__init__.py'))


def test_op_build_seconds_times_the_build_alone():
  start = time.perf_counter()
  built = measure.op_build_seconds(200)
  wall = time.perf_counter() - start
  # x = tf.constant(1.0), then x + 1.0 until the graph holds 200 ops (each
  # addition adds the constant 1.0 and the add).
  assert built['op_count'] == 201
  assert 0.0 < built['seconds'] <= wall
