"""A pytest plugin for tests/mutants/coverage_map.py: names each test's
coverage after the test.

In the pytest process, coverage's dynamic context switches to the test's
node id while the test runs (its setup and teardown included). A process the
test starts (a CLI run, a cluster task) inherits VM_MUTANT_TEST_ID, which
the coverage configuration coverage_map.py writes takes as that process's
static context, so its lines count for the test too.
"""

import os

import coverage
import pytest

ENV_KEY = 'VM_MUTANT_TEST_ID'


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):  # pylint: disable=unused-argument
  current = coverage.Coverage.current()
  os.environ[ENV_KEY] = item.nodeid
  if current is not None:
    current.switch_context(item.nodeid)
  try:
    yield
  finally:
    os.environ.pop(ENV_KEY, None)
    if current is not None:
      current.switch_context('')
