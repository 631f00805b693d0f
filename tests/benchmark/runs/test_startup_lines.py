"""No error-looking line on a machine without a GPU: README's commands, the
digits example, --device=cpu, a cluster's tasks and the library example
write no TensorFlow error or warning line to stderr (TensorFlow's
`failed call to cuInit` where there is no NVIDIA driver is the expected
answer of CUDA, kept off stderr by `variable_mgr.cuda_probe`)."""

import os
import re
import subprocess
import sys

import pytest

from variable_mgr import cuda_probe

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
BENCH = ['-m', 'variable_mgr.benchmark']
SHORT = ['--num_batches=2', '--num_warmup_batches=1']

# A line TensorFlow's C++ logging marks as an error, a fatal error or a
# warning: absl's `E0000 ...` (TensorFlow 2) or `2026-... : E tensorflow/...`
# (1.15); and the benchmark's own error line.
ERROR_LOOKING = re.compile(
    r'^([EWF]\d{4} |\d{4}-\d\d-\d\d [\d:.]+: [EWF] |variable_mgr_benchmark: '
    r'error)')

COMMANDS = {
    'readme_defaults': BENCH + SHORT,
    'readme_lenet_4_cpu_towers': BENCH + SHORT + [
        '--device=cpu', '--num_gpus=4', '--model=lenet',
        '--variable_update=replicated'],
    'digits_example': BENCH + [
        '--data_name=digits', '--model=lenet', '--num_gpus=2',
        '--variable_update=replicated', '--batch_size=32'] + SHORT,
    'resnet50_device_cpu': BENCH + [
        '--model=resnet50', '--device=cpu', '--batch_size=2',
        '--num_batches=1', '--num_warmup_batches=0'],
    'cluster_tasks': BENCH + [
        '--launch_local_cluster', '--num_ps=1', '--num_workers=2',
        '--variable_update=distributed_replicated', '--model=trivial',
        '--num_gpus=2'] + SHORT,
    'example_replicated': ['examples/train_towers.py'],
    'example_distributed_replicated': ['examples/train_towers.py',
                                       'distributed_replicated'],
}


def error_looking_lines(argv):
  env = dict(os.environ, PYTHONPATH=REPO)
  for name in ('TF_CPP_MIN_LOG_LEVEL', 'TF_CONFIG'):
    env.pop(name, None)
  proc = subprocess.run([sys.executable] + argv, cwd=REPO, env=env,
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                        universal_newlines=True, timeout=300)
  assert proc.returncode == 0, proc.stderr
  # The launcher prefixes its tasks' lines with the task's name.
  lines = [re.sub(r'^\[(ps|worker|controller):\d+\] ', '', l)
           for l in proc.stderr.splitlines() + proc.stdout.splitlines()]
  return [l for l in lines if ERROR_LOOKING.match(l)]


# The suite runs the quick commands, digits among them: its tf.data map
# starts the eager context, which lists the devices (CUDA's probe) where a
# synthetic run's session does not; the rest, of the same start-up paths
# (a cluster, resnet50, the example's cluster), with --long.
LONG_COMMANDS = ('cluster_tasks', 'example_distributed_replicated',
                 'resnet50_device_cpu')


@pytest.mark.parametrize('name', [
    pytest.param(n, marks=[pytest.mark.long] if n in LONG_COMMANDS else [])
    for n in sorted(COMMANDS)])
def test_no_error_looking_line(name):
  # The exact list of such lines, on both generations: none.
  assert error_looking_lines(COMMANDS[name]) == []


@pytest.mark.parametrize('line, expected', [
    ('E0000 00:00:1796276970.502968    1618 cuda_platform.cc:52] failed '
     'call to cuInit: INTERNAL: CUDA error: Failed call to cuInit: UNKNOWN '
     'ERROR (303)', True),
    ('2026-12-03 05:51:22.722220: E tensorflow/stream_executor/cuda/'
     'cuda_driver.cc:318] failed call to cuInit: UNKNOWN ERROR (303)', True),
    # Another file's error, or a warning of the same words, is not it.
    ('E0000 00:00:1796276970.502968    1618 session.cc:52] failed call to '
     'cuInit: x', False),
    ('W0000 00:00:1796276970.502968    1618 cuda_platform.cc:52] failed '
     'call to cuInit: x', False),
    ('E0000 00:00:1796276970.502968    1618 cuda_platform.cc:52] out of '
     'memory', False),
])
def test_only_the_cuinit_line_is_kept_off(line, expected):
  assert bool(cuda_probe.EXPECTED_LINE.match(line)) == expected


def test_the_probe_keeps_off_the_line_only_without_a_driver():
  kept = cuda_probe.probe_devices()
  if cuda_probe.without_driver():
    # Once a process, and only the expected line (or none: the process's
    # devices were listed already by another test).
    assert all(cuda_probe.EXPECTED_LINE.match(l) for l in kept)
  else:
    assert kept == []
