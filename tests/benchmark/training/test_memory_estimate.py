"""The memory estimate made before the graph is built: near what a run
measures, a refusal of tf_cnn_benchmarks' 8-GPU ResNet-50 line on CPU
towers that names the estimate, the memory available and the flags, and
the line of a --device=gpu fallback to CPU towers."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from variable_mgr.benchmark import cli
from variable_mgr.benchmark.reports import output
from variable_mgr.benchmark.training import harness
from variable_mgr.benchmark.training import memory_estimate
from variable_mgr.benchmark.training import run_config

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))

# One run, in a fresh process: its resident bytes before the run, its
# peak after, and the estimate of the same config from the same start.
_MEASURE = '''
import json, sys
import tensorflow as _tf
_tf.compat.v1.disable_eager_execution()
from variable_mgr.benchmark.runs import local_run
from variable_mgr.benchmark.training import memory_estimate
from variable_mgr.benchmark.training import run_config
kw = json.loads(sys.argv[1])
base = memory_estimate.resident_bytes()
cfg = run_config.BenchmarkConfig(device='cpu', num_warmup_batches=1,
                                 num_batches=2, **kw)
resolved = cfg.resolved()
est = memory_estimate.estimate(resolved, resolved.num_gpus, base)
local_run.run_one(cfg, log=lambda line: None)
with open('/proc/self/status') as f:
  peak = [int(l.split()[1]) * 1024 for l in f if l.startswith('VmHWM:')][0]
print(json.dumps({'base': base, 'peak': peak, 'estimate': est.total}))
'''


@pytest.mark.skipif(not os.path.exists('/proc/self/status'),
                    reason='resident bytes from /proc')
def test_the_estimate_is_within_a_factor_of_2_of_a_measured_run():
  # Not one of the runs the factors were fitted to.
  config = {'model': 'resnet20', 'data_name': 'cifar10', 'batch_size': 32,
            'num_gpus': 2, 'variable_update': 'replicated',
            'optimizer': 'momentum'}
  env = dict(os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL='2')
  out = subprocess.run([sys.executable, '-c', _MEASURE, json.dumps(config)],
                       cwd=REPO, env=env, stdout=subprocess.PIPE,
                       universal_newlines=True, timeout=300, check=True).stdout
  got = json.loads(out.strip().splitlines()[-1])
  measured = got['peak'] - got['base']
  estimated = got['estimate'] - got['base']
  assert 0.5 <= measured / estimated <= 2.0, (measured, estimated)


def _upstream_8_gpu_line():
  """tf_cnn_benchmarks' 8-GPU ResNet-50 line with NHWC, where there is no
  GPU: 8 CPU towers of 256 images."""
  return run_config.BenchmarkConfig(
      model='resnet50', batch_size=256, num_gpus=8,
      variable_update='replicated', device='cpu',
      device_fallback=True).resolved()


def test_the_22_gb_case_is_estimated_past_22_gb_and_refused():
  config = _upstream_8_gpu_line()
  est = memory_estimate.estimate(config, 8, 600 * 10**6)
  # The run was killed by the kernel at 22 GB: it needs more than that.
  assert est.total > 22e9
  # Most of it is the activations of 8 x 256 images.
  assert est.activations > 0.9 * (est.total - est.runtime)
  with pytest.raises(memory_estimate.OutOfMemoryError) as raised:
    memory_estimate.check(config, 8, runtime_bytes=600 * 10**6,
                          available=(21.3e9, 'MemAvailable in /proc/meminfo'))
  message = str(raised.value)
  assert message.startswith(
      '--model=resnet50 --batch_size=256 --num_gpus=8: this run needs about '
      '%.1f GB of memory (TensorFlow, the graph and the session 0.8 GB; '
      % (est.total / 1e9))
  assert ('and 21.3 GB is available (MemAvailable in /proc/meminfo) '
          '(--device=gpu found no GPU: the 8 towers are CPU towers in this '
          'memory); pass --batch_size=' in message)
  fits = memory_estimate.largest_batch(config, 8, 600 * 10**6, 21.3e9)
  assert 1 <= fits < 256
  assert '--batch_size=%d or less' % fits in message
  # The advice fits, and one more image a tower does not.
  assert memory_estimate.estimate(config._replace(batch_size=fits), 8,
                                  0).total <= 21.3e9
  assert memory_estimate.estimate(config._replace(batch_size=fits + 1), 8,
                                  0).total > 21.3e9


def test_the_command_refuses_before_any_graph(monkeypatch, capsys):
  monkeypatch.setattr(memory_estimate, 'available_bytes',
                      lambda: (21.3e9, 'MemAvailable in /proc/meminfo'))
  # Were the check missing, the run would not start building 200 GB.
  def built(*unused_args, **unused_kwargs):
    raise AssertionError('a graph was built')
  monkeypatch.setattr(harness, 'build_training_graph', built)
  status = cli.main(['--model=resnet50', '--batch_size=256', '--num_gpus=8',
                     '--variable_update=replicated', '--device=cpu'])
  captured = capsys.readouterr()
  assert status == 2
  assert captured.out == ''  # No header: nothing was built.
  lines = captured.err.strip().splitlines()
  assert len(lines) == 1
  assert lines[0].startswith(
      'variable_mgr_benchmark: error: --model=resnet50 --batch_size=256 '
      '--num_gpus=8: this run needs about ')
  assert 'GB is available' in lines[0]


def test_a_run_that_fits_is_not_refused():
  config = run_config.BenchmarkConfig(model='lenet', data_name='small',
                                      batch_size=8, num_gpus=2,
                                      device='cpu').resolved()
  est = memory_estimate.check(config, 2, runtime_bytes=600 * 10**6,
                              available=(1e9, 'test'))
  assert est.total - est.runtime < 1e9


def test_available_bytes_takes_the_cgroup_limit_when_lower(tmp_path):
  meminfo = tmp_path / 'meminfo'
  meminfo.write_text('MemTotal: 32000000 kB\nMemAvailable: 20000000 kB\n')
  cgroup = tmp_path / 'cgroup'
  cgroup.mkdir()
  (cgroup / 'memory.max').write_text('8000000000\n')
  (cgroup / 'memory.current').write_text('3000000000\n')
  assert memory_estimate.available_bytes(str(meminfo), str(cgroup)) == (
      5000000000, 'the room under the cgroup limit %s' % (
          cgroup / 'memory.max'))
  (cgroup / 'memory.max').write_text('max\n')
  assert memory_estimate.available_bytes(str(meminfo), str(cgroup)) == (
      20000000 * 1024, 'MemAvailable in %s' % meminfo)


class _Host(object):
  num_gpus = 8
  raw_devices = ['/cpu:%d' % i for i in range(8)]


@pytest.mark.parametrize('fallback, towers, expected', [
    (True, 8, True), (True, 1, False), (False, 8, False)])
def test_a_fallback_to_cpu_towers_has_a_line_of_its_own(fallback, towers,
                                                        expected):
  config = run_config.BenchmarkConfig(
      model='trivial', data_name='small', num_gpus=towers, device='cpu',
      device_fallback=fallback).resolved()
  host = _Host()
  host.num_gpus = towers
  lines = []
  output.print_header(config, host, lines.append)
  own = [l for l in lines if l.startswith('--device=gpu found no GPU')]
  if expected:
    assert own == [
        '--device=gpu found no GPU: the 8 towers are 8 virtual CPU devices '
        'sharing this machine\'s %d processors and its memory (pass '
        '--device=cpu to say so, or fewer --num_gpus)' % os.cpu_count()]
  else:
    assert own == []


def test_the_footprint_of_a_model_is_its_variables_and_one_image():
  from variable_mgr.benchmark.models import catalog  # pylint: disable=g-import-not-at-top
  for name, data in (('trivial', None), ('lenet', None),
                     ('resnet20', 'cifar10')):
    fp = memory_estimate.footprint(name, data)
    shape = catalog.get_model(name, data).image_shape
    assert fp.image_bytes == 4 * shape[0] * shape[1] * shape[2], name
    params = sum(int(np.prod(s, dtype=np.int64))
                 for s in catalog.variable_shapes(name, data))
    assert fp.param_bytes == 4 * params, name


def test_the_backward_pass_keeps_a_part_of_the_forward_tensors():
  """The activations estimated for backward are a part of every forward
  tensor of the batch on every tower (some, not more than all), and grow
  with the batch."""
  def estimated(batch_size):
    config = run_config.BenchmarkConfig(
        model='lenet', batch_size=batch_size, num_gpus=2,
        device='cpu').resolved()
    return memory_estimate.estimate(config, 2, 0)

  one, two = estimated(16), estimated(32)
  forward = one.footprint.activation_bytes_per_image * 16 * 2
  assert 0 < one.activations <= forward
  assert abs(two.activations - 2 * one.activations) <= 1


def test_each_copy_of_the_variables_holds_the_weights_and_their_slots():
  """The variables' part as the docstring gives it: the parameters and
  the optimizer's slots (momentum one, adam two) a copy, a copy a tower
  under replicated and one under parameter_server, plus 3 parameter-sized
  transients of their initialisation."""
  def variables(optimizer, strategy, towers):
    config = run_config.BenchmarkConfig(
        model='lenet', batch_size=8, num_gpus=towers, device='cpu',
        optimizer=optimizer, variable_update=strategy).resolved()
    return memory_estimate.estimate(config, towers, 0)

  params = variables('sgd', 'parameter_server', 1).footprint.param_bytes
  for optimizer, slots in (('sgd', 0), ('momentum', 1), ('adam', 2)):
    for strategy, towers, copies in (('parameter_server', 3, 1),
                                     ('replicated', 3, 3),
                                     ('replicated', 1, 1)):
      got = variables(optimizer, strategy, towers).variables
      assert got == params * (copies * (1 + slots) + 3), (
          optimizer, strategy, towers)


def test_largest_batch_is_the_largest_that_fits_down_to_one_image():
  """The search against a scan of every batch: rooms that fit exactly 1,
  a middle batch, the whole batch, and none."""
  config = _upstream_8_gpu_line()._replace(batch_size=16)
  runtime = 600 * 10**6

  def need(batch):
    return memory_estimate.estimate(config._replace(batch_size=batch), 8,
                                    runtime).total - runtime

  def scan(room):
    return max([b for b in range(1, 17) if need(b) <= room] or [0])

  for room in (need(1), need(7), need(16), need(1) - 1):
    assert memory_estimate.largest_batch(config, 8, runtime, room) == \
        scan(room), room
  assert scan(need(1)) == 1 and scan(need(1) - 1) == 0
