"""TensorFlow's CUDA probe on a machine without an NVIDIA driver.

A CUDA build of TensorFlow (TensorFlow 2's `tensorflow` wheel on Linux,
`tensorflow-gpu` 1.15) asks CUDA for its devices the first time a process
lists them: when a session or a server is made without `GPU: 0` in its
device count, or when the eager context starts, which a graph with a
`tf.data` function (a dataset's `map`) does whatever the session asks.
Without the NVIDIA driver CUDA's `cuInit` fails, and TensorFlow logs that
as an error line, once a process:

    E0000 ... cuda_platform.cc:52] failed call to cuInit: INTERNAL: CUDA error: Failed call to cuInit: UNKNOWN ERROR (303)

(TensorFlow 1.15's `tensorflow-gpu`: `E tensorflow/stream_executor/cuda/
cuda_driver.cc:318] failed call to cuInit: UNKNOWN ERROR (303)`). On such a
machine that is the expected answer, not an error: the run goes on on the
CPU. `probe_devices()` makes that first probe itself, with the process's
stderr (file descriptor 2) going to a temporary file meanwhile, and writes
back every line the probe wrote except the ones `EXPECTED_LINE` matches; it
does so only where there is no driver (Linux, a CUDA build, no
`/proc/driver/nvidia/version`), so where a driver is, a failing `cuInit` is
a real error and is shown as TensorFlow writes it. After the probe
TensorFlow keeps CUDA's answer and logs nothing more about it.

Calling it changes no TensorFlow state a program could see except that the
device list is made now instead of later (which fixes the physical devices:
call it before `tf.config.set_visible_devices` or not at all); importing
this module changes nothing.
"""

import os
import re
import sys
import tempfile

NVIDIA_DRIVER_FILE = '/proc/driver/nvidia/version'

# The error line of CUDA's failed initialisation without a driver: the
# message of TensorFlow 2 (cuda_platform.cc) and of 1.15 (cuda_driver.cc).
EXPECTED_LINE = re.compile(
    r'^(E\d{4} |\d{4}-\d\d-\d\d [\d:.]+: E ).*'
    r'\b(cuda_platform|cuda_driver)\.cc:\d+\] failed call to cuInit: ')


def without_driver():
  """True on Linux with a CUDA build of TensorFlow and no NVIDIA driver:
  there TensorFlow's probe of CUDA fails as expected."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return (sys.platform.startswith('linux') and tf.test.is_built_with_cuda()
          and not os.path.exists(NVIDIA_DRIVER_FILE))


def probe_devices():
  """Lists TensorFlow's physical devices once, now; where there is no
  NVIDIA driver, with the expected `failed call to cuInit` line kept off
  stderr and every other line it writes passed on. Returns the lines kept
  off (none elsewhere)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if not without_driver():
    tf.config.experimental.list_physical_devices()
    return []
  sys.stderr.flush()
  kept_off = []
  with tempfile.TemporaryFile() as captured:
    saved = os.dup(2)
    os.dup2(captured.fileno(), 2)
    try:
      tf.config.experimental.list_physical_devices()
    finally:
      os.dup2(saved, 2)
      os.close(saved)
    captured.seek(0)
    for raw in captured:
      line = raw.decode('utf-8', 'replace')
      if EXPECTED_LINE.match(line):
        kept_off.append(line.rstrip('\n'))
      else:
        os.write(2, raw)
  return kept_off
