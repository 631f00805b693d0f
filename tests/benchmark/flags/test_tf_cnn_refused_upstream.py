"""The table of tf_cnn_benchmarks' flags (`flags.tf_cnn_refused`) is
master's own: every `flags.DEFINE_*` of master's benchmark_cnn.py, read
from its source, with the same name, kind and default (a list's as it is
typed), and no other.
Skipped where master's files are absent (see tests/upstream)."""

import ast
import os
import sys

import pytest

from variable_mgr.benchmark.flags import command_line
from variable_mgr.benchmark.flags import value_types

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))))),
                                'benchmarks'))

import upstream_master  # pylint: disable=g-import-not-at-top,wrong-import-position

UPSTREAM = upstream_master.find_upstream()
pytestmark = pytest.mark.skipif(
    UPSTREAM is None,
    reason='master\'s tf_cnn_benchmarks not found (set %s or put '
    'shared/upstream/tf_cnn_benchmarks beside the checkout)' %
    upstream_master.UPSTREAM_ENV)

KINDS = {'DEFINE_boolean': 'bool', 'DEFINE_integer': 'int',
         'DEFINE_float': 'float', 'DEFINE_string': 'string',
         'DEFINE_enum': 'enum', 'DEFINE_list': 'list'}


def _constants():
  """A namespace of master's constants.py (enums of str, no TensorFlow)."""
  namespace = {}
  with open(os.path.join(UPSTREAM, 'constants.py')) as f:
    exec(compile(f.read(), 'constants.py', 'exec'), namespace)  # pylint: disable=exec-used
  return type('constants', (), namespace)


def _master_flags():
  """[(name, kind, default)] of master's benchmark_cnn.py, in its order."""
  with open(os.path.join(UPSTREAM, 'benchmark_cnn.py')) as f:
    tree = ast.parse(f.read())
  names = {'__builtins__': {}, 'constants': _constants()}
  found = []
  for node in ast.walk(tree):
    if (isinstance(node, ast.Call) and
        isinstance(node.func, ast.Attribute) and
        isinstance(node.func.value, ast.Name) and
        node.func.value.id == 'flags' and node.func.attr in KINDS):
      name = ast.literal_eval(node.args[0])
      # A literal, arithmetic of literals (4 << 30) or a constant of
      # master's (an enum of str: its value).
      default = eval(compile(ast.Expression(node.args[1]), '<default>',  # pylint: disable=eval-used
                             'eval'), names)
      default = getattr(default, 'value', default)
      found.append((node.lineno, name, KINDS[node.func.attr], default))
  return [f[1:] for f in sorted(found)]


def test_the_table_is_master_s_flags():
  master = _master_flags()
  ours = list(command_line.TF_CNN_FLAGS)
  assert len(master) == 137
  assert sorted(n for n, _, _ in ours) == sorted(n for n, _, _ in master)
  master_by_name = dict((n, (k, d)) for n, k, d in master)
  for name, kind, default in ours:
    want_kind, want_default = master_by_name[name]
    assert kind == want_kind, name
    if kind == 'list':  # The table keeps a list's default as typed.
      want_default = ','.join(want_default)
    assert default == want_default and (
        type(default) is type(want_default)), (name, default, want_default)


def test_the_value_accepted_for_a_lacking_flag_is_master_s_default():
  """A tf_cnn_benchmarks flag this benchmark lacks is accepted at the one
  value that says what this benchmark does: master's default in each case
  (its float 0 written 0.0, its unset use_unified_memory written False)."""
  master = dict((n, d) for n, _, d in _master_flags())
  master['gpu_memory_frac_for_testing'] = float(
      master['gpu_memory_frac_for_testing'])
  assert master['use_unified_memory'] is None
  master['use_unified_memory'] = False
  for name, value in command_line.TF_CNN_SAME_VALUES.items():
    assert value == master[name] and type(value) is type(master[name]), name


def test_master_s_default_of_a_lacking_flag_passes_the_parser():
  """Given on the command line, each value the table accepts for a flag the
  benchmark lacks (master's default) passes the parser, whose refusals
  read the table; the same flag with another value is refused by name."""
  for name, value in command_line.TF_CNN_SAME_VALUES.items():
    kind = command_line.TF_CNN_FLAG_KINDS[name]
    if kind == 'bool':
      arg = '--%s' % name if value else '--no%s' % name
      other = '--no%s' % name if value else '--%s' % name
    else:
      arg = '--%s=%s' % (name, value)
      other = '--%s=%s' % (name, 'other' if kind in ('string', 'enum')
                           else 7)
    command_line.parse_args([arg], environ={})
    with pytest.raises(value_types.UsageError) as refused:
      command_line.parse_args([other], environ={})
    assert str(refused.value).startswith(
        '%s: a tf_cnn_benchmarks flag this benchmark does not support' %
        other), str(refused.value)
