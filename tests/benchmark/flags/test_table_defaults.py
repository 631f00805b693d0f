"""Every flag of the benchmark's table takes its own default when it is
typed: a command line that spells the defaults out (a script that writes
every flag, a run's header pasted back) parses to the same values.

Each test reads the table while it runs, not only at collection: coverage
then names these tests for the table's lines (tests/mutants/
coverage_map.py), so a mutant of a flag's definition runs them first
instead of the whole runs that merely import the table."""

import pytest

from variable_mgr.benchmark.flags import table


def _typed(default):
  """The default as a command line would spell it."""
  if isinstance(default, (list, tuple)):
    return ','.join(str(v) for v in default)
  if isinstance(default, bool):
    return str(default).lower()
  return str(default)


def _defaulted():
  """{name: definition} of the flags with a default."""
  return dict((d.name, d) for d in table.definitions()
              if d.default is not None)


def test_most_flags_have_a_default_to_type():
  assert len(_defaulted()) > 50


@pytest.mark.parametrize('name', sorted(_defaulted()))
def test_the_default_typed_parses_to_itself(name):
  definition = _defaulted()[name]
  parsed = definition.convert(_typed(definition.default))
  if isinstance(definition.default, (list, tuple)):
    parsed, expected = list(parsed), list(definition.default)
  else:
    expected = definition.default
  assert parsed == expected
