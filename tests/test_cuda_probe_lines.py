"""`cuda_probe.probe_devices` keeps CUDA's expected `failed call to
cuInit` line off stderr and passes every other line on, in order.

Run in a fresh interpreter with a stand-in `tensorflow` module whose device
listing writes the lines a CUDA build writes without a driver: the probe
redirects file descriptor 2, which pytest's own capture must not hide."""

import io
import os
import subprocess
import sys
import types

import pytest

from variable_mgr import cuda_probe

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CUINIT = ('E0000 00:00:1796339453.509934 6934 cuda_platform.cc:52] failed '
          'call to cuInit: INTERNAL: CUDA error: Failed call to cuInit: '
          'UNKNOWN ERROR (303)')

SCRIPT = r'''
import io, os, sys, types
fake = types.ModuleType('tensorflow')
def list_physical_devices():
  os.write(2, %(cuinit)r + b'\n')
  os.write(2, b'I0000 another line of the probe\n')
  return []
fake.config = types.SimpleNamespace(experimental=types.SimpleNamespace(
    list_physical_devices=list_physical_devices))
sys.modules['tensorflow'] = fake
from variable_mgr import cuda_probe
cuda_probe.without_driver = lambda: True
# A program may hold stderr in a buffer of its own (Python's own stderr
# writes through): text it wrote before the probe is not the probe's.
sys.stderr = io.TextIOWrapper(io.BufferedWriter(io.FileIO(2, 'w',
                                                          closefd=False)))
sys.stderr.write('written before the probe, ')  # still in the buffer
kept = cuda_probe.probe_devices()
os.write(2, b'written after it\n')
sys.stderr.flush()
print(repr(kept))
'''


def test_only_the_cuinit_line_is_kept_off_and_the_rest_keeps_its_order():
  env = dict(os.environ, PYTHONPATH=REPO)
  result = subprocess.run(
      [sys.executable, '-c', SCRIPT % {'cuinit': CUINIT.encode()}],
      stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=60,
      check=True, universal_newlines=True)
  assert result.stdout.strip() == repr([CUINIT])
  # Python's pending stderr text goes out before the probe, the probe's
  # other line after it, and stderr is fd 2 again after the probe.
  assert result.stderr == ('written before the probe, '
                           'I0000 another line of the probe\n'
                           'written after it\n')


def test_in_this_process_stderr_is_fd_2_again_and_no_descriptor_stays_open(
    capfd, monkeypatch):
  """The same probe inside the test process (pytest's descriptor capture
  stands for the terminal): Python's pending stderr text first, the other
  line of the probe, then what is written to fd 2 after it; the
  descriptors open before are the ones open after."""
  fake = types.ModuleType('tensorflow')

  def list_physical_devices():
    os.write(2, CUINIT.encode() + b'\n')
    os.write(2, b'I0000 another line of the probe\n')
    return []

  fake.config = types.SimpleNamespace(experimental=types.SimpleNamespace(
      list_physical_devices=list_physical_devices))
  monkeypatch.setitem(sys.modules, 'tensorflow', fake)
  monkeypatch.setattr(cuda_probe, 'without_driver', lambda: True)
  stderr = io.TextIOWrapper(io.BufferedWriter(io.FileIO(2, 'w',
                                                        closefd=False)))
  monkeypatch.setattr(sys, 'stderr', stderr)
  open_before = sorted(os.listdir('/proc/self/fd'))
  stderr.write('written before the probe, ')  # still in the buffer
  kept = cuda_probe.probe_devices()
  os.write(2, b'written after it\n')
  open_after = sorted(os.listdir('/proc/self/fd'))
  assert kept == [CUINIT]
  assert capfd.readouterr().err == ('written before the probe, '
                                    'I0000 another line of the probe\n'
                                    'written after it\n')
  assert open_after == open_before


@pytest.mark.parametrize('platform,cuda_build,driver,expected', [
    ('linux', True, False, True),
    ('linux', False, False, False),   # a CPU build probes no CUDA
    ('linux', True, True, False),     # a driver: cuInit may succeed
    ('darwin', True, False, False),
])
def test_without_driver_needs_linux_a_cuda_build_and_no_driver(
    monkeypatch, tmp_path, platform, cuda_build, driver, expected):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  driver_file = tmp_path / 'version'
  if driver:
    driver_file.write_text('NVRM version: 0\n')
  monkeypatch.setattr(sys, 'platform', platform)
  monkeypatch.setattr(tf.test, 'is_built_with_cuda', lambda: cuda_build)
  monkeypatch.setattr(cuda_probe, 'NVIDIA_DRIVER_FILE', str(driver_file))
  assert bool(cuda_probe.without_driver()) is expected
