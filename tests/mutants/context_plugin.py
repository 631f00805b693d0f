"""A pytest plugin for tests/mutants/coverage_map.py: names each test's
coverage after the test.

In the pytest process, coverage's dynamic context switches to the test's
node id while the test runs (its setup and teardown included). A process the
test starts (a CLI run, a cluster task, and the processes those start)
measures itself with the configuration coverage's `patch = subprocess`
passes down in COVERAGE_PROCESS_CONFIG, which this plugin rewrites while the
test runs to carry the test's node id as the static context: coverage
serialises its configuration once at start, with the context it expanded
then (none), so without the rewrite every line a child process ran would
count for no test. VM_MUTANT_TEST_ID names the test as well.

In the pytest process it also turns off AutoGraph's conversion of the
functions tf.data traces (a dataset's `map`): AutoGraph runs a converted
copy of a function's source, generated into a file of its own, so the
package lines of an input pipeline's map functions (decoding, crops,
flips, the evaluation resize) had run for no test. The package's map
functions have no Python control flow on tensors, so they trace to the
same graph unconverted; a test that needed the conversion would fail the
map's run and say so. The processes a test starts still convert theirs.
"""

import copy
import os

import coverage
import pytest

ENV_KEY = 'VM_MUTANT_TEST_ID'
# Where coverage's `patch = subprocess` puts the configuration a child
# process measures itself with.
CONFIG_KEY = 'COVERAGE_PROCESS_CONFIG'


def pytest_configure(config):  # pylint: disable=unused-argument
  try:
    from tensorflow.python.autograph.impl import api  # pylint: disable=g-import-not-at-top
  except ImportError:
    return
  # tf.data's structured functions look tf_convert up on the module at
  # each trace.
  api.tf_convert = _unconverted


def _unconverted(f, ctx, convert_by_default=True, user_requested=False):  # pylint: disable=unused-argument
  return f


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):  # pylint: disable=unused-argument
  current = coverage.Coverage.current()
  os.environ[ENV_KEY] = item.nodeid
  previous = os.environ.get(CONFIG_KEY)
  if current is not None:
    current.switch_context(item.nodeid)
    if previous is not None:
      config = copy.copy(current.config)
      config.context = item.nodeid
      os.environ[CONFIG_KEY] = config.serialize()
  try:
    yield
  finally:
    os.environ.pop(ENV_KEY, None)
    if previous is not None:
      os.environ[CONFIG_KEY] = previous
    if current is not None:
      current.switch_context('')
