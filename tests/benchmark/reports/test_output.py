"""What a run prints: tf_cnn_benchmarks' step lines, their images/sec with
its uncertainty and jitter, and the closing total, against the formulas of
tf_cnn_benchmarks' `get_perf_timing` worked out here."""

import math
import statistics

import pytest

from variable_mgr.benchmark.reports import output


def _upstream_timing(batch_size, step_times):
  """(mean, uncertainty, jitter) as tf_cnn_benchmarks' get_perf_timing
  computes them: the mean is the batch over the mean step time, not the
  mean of the steps' speeds."""
  speeds = [batch_size / t for t in step_times]
  mean = batch_size / (sum(step_times) / len(step_times))
  uncertainty = statistics.pstdev(speeds) / math.sqrt(len(speeds))
  centre = statistics.median(speeds)
  jitter = 1.4826 * statistics.median([abs(s - centre) for s in speeds])
  return mean, uncertainty, jitter


@pytest.mark.parametrize('step_times', [[0.5, 1.0, 2.0], [0.25, 0.25, 0.3,
                                                          0.9]])
def test_perf_timing_is_tf_cnn_benchmarks(step_times):
  mean, uncertainty, jitter = _upstream_timing(32, step_times)
  # Speeds that differ: the mean of the speeds is another figure.
  assert abs(mean - statistics.mean(32 / t for t in step_times)) > 1.0
  assert output.perf_timing_str(32, step_times) == (
      'images/sec: %.1f +/- %.1f (jitter = %.1f)' % (mean, uncertainty,
                                                      jitter))


def test_step_lines_at_the_first_step_and_every_display_every():
  lines, step_times, losses = [], [], []
  for step in range(7):
    output.record_step(step, 0.5, 2.0 - 0.25 * step, step_times, losses,
                       global_batch=8, display_every=3, log=lines.append,
                       accuracy=(0.5, 0.75))
  assert step_times == [0.5] * 7 and losses[-1] == 0.5
  # tf_cnn_benchmarks numbers the steps from 1 and prints step 1 and every
  # display_every-th: 1, 3, 6.
  assert [line.split('\t')[0] for line in lines] == ['1', '3', '6']
  assert lines[1].split('\t')[2:] == ['1.500', '0.500', '0.750']
  assert lines[1].split('\t')[1] == output.perf_timing_str(8, [0.5] * 3)


def test_total_images_per_sec_counts_every_timed_step():
  lines = []
  # 4 steps of 8 images in 2.5 seconds, waits between the steps included.
  assert output.report_throughput(8, [0.5] * 4, 2.5, lines.append) == 12.8
  assert lines[1] == 'total images/sec: 12.80'
  assert output.report_throughput(8, [], 2.5, lines.append) is None
