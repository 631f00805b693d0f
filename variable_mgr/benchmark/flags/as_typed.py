"""How an error message names a flag: as the command line typed it.

A parsed namespace carries `typed_names` (destination -> the flag as typed:
an alias, a `--no` form, a single dash) and `typed_values` (destination ->
the value as typed, the last one given). A BenchmarkConfig built in Python
has neither: its flags are named by their tf_cnn_benchmarks names.
"""

# Destinations whose flag has another name in tf_cnn_benchmarks (the flag
# table's `dest` and `name`; a test checks that they agree).
CANONICAL_NAMES = {'learning_rate': 'init_learning_rate',
                   'seed': 'tf_random_seed'}


def typed_name(args, dest):
  """The flag of `dest` as typed ('--seed', '--nostaged_vars', '-model'),
  or its tf_cnn_benchmarks name when it was not typed."""
  names = getattr(args, 'typed_names', None) or {}
  return names.get(dest, '--' + CANONICAL_NAMES.get(dest, dest))


def flag_list(dests, args=None):
  """The flags of `dests`, named as typed when `args` says how."""
  return ', '.join(typed_name(args, d) for d in dests)


def value(args, dest):
  """`--flag=value` with the flag named as typed (`--seed=5`,
  `--nostaged_vars`) and the parsed value."""
  name = typed_name(args, dest)
  parsed = getattr(args, dest)
  if parsed is False and name.lstrip('-') == 'no' + dest:
    return name
  if isinstance(parsed, (list, tuple)):
    parsed = ','.join(str(v) for v in parsed)
  elif isinstance(parsed, bool):
    parsed = str(parsed).lower()
  return '%s=%s' % (name, parsed)


def given(args, dest):
  """`--flag=value` as typed (`--minimum_learning_rate=1`, `--seed=07`), or
  as `value` writes it when the value was not typed."""
  values = getattr(args, 'typed_values', None) or {}
  if dest in values and dest in (getattr(args, 'typed_names', None) or {}):
    return '%s=%s' % (typed_name(args, dest), values[dest])
  return value(args, dest)
