"""The benchmark flags' value types: absl parsers whose refusals say the
rule and the fix.

Each type is a function of the text typed that returns the value or raises
ValueError; `{flag}` in its message stands for the flag as typed, which
the caller fills in ('--num_gpus=0: must be at least 1; pass --num_gpus=1
or more'). `ValueParser` makes one an absl `ArgumentParser`.
"""

import difflib
import math
import re

from absl import flags as absl_flags

from variable_mgr.benchmark.flags import lr_schedule


class UsageError(Exception):
  """A flag value the command refuses before building anything."""


class ValueParser(absl_flags.ArgumentParser):
  """The absl parser of one value type.

  Args:
    convert: text -> value, raising ValueError ({flag}: the flag as typed).
    kind: the type's name in absl's help (`flag_type`).
    syntax: what a value looks like, printed under the flag's help.
  """

  def __init__(self, convert, kind, syntax=''):
    super(ValueParser, self).__init__()
    self.convert = convert
    self.kind = kind
    self.syntactic_help = syntax

  def parse(self, argument):
    # A default arrives parsed already (False, 4, [1, 2, 4]).
    if not isinstance(argument, str):
      return argument
    return self.convert(argument)

  def flag_type(self):
    return self.kind


class TextSerializer(absl_flags.ArgumentSerializer):
  """A value as it is typed: true/false, comma-separated lists."""

  def serialize(self, value):
    if isinstance(value, bool):
      return 'true' if value else 'false'
    if isinstance(value, (list, tuple)):
      return ','.join(str(v) for v in value)
    return str(value)


def parse_bool(text):
  """absl's boolean values (true, false, t, f, 1, 0, any case), and yes,
  no, on, off."""
  word = str(text).lower()
  if word in ('1', 'true', 't', 'yes', 'on'):
    return True
  if word in ('0', 'false', 'f', 'no', 'off'):
    return False
  raise ValueError('expected true or false; pass {flag}=true or {flag}=false')


def text(value):
  return value


def int_at_least(minimum):
  def parse(value):
    try:
      number = int(value)
    except ValueError:
      raise ValueError('not an integer; pass a whole number of at least %d, '
                       'e.g. {flag}=%d' % (minimum, max(minimum, 1)))
    if number < minimum:
      raise ValueError('must be at least %d; pass {flag}=%d or more' % (
          minimum, minimum))
    return number
  return parse


def integer(value):
  try:
    return int(value)
  except ValueError:
    raise ValueError('not an integer; pass a whole number, e.g. {flag}=1234')


def finite(value):
  try:
    number = float(value)
  except ValueError:
    raise ValueError('not a number; pass e.g. {flag}=0.1')
  if not math.isfinite(number):
    raise ValueError('must be a finite number; pass e.g. {flag}=0.1')
  return number


def positive_float(value):
  number = finite(value)
  if not number > 0:
    raise ValueError(
        'must be positive; pass a number above 0, e.g. {flag}=0.1')
  return number


def non_negative_float(value):
  number = finite(value)
  if number < 0:
    raise ValueError('must be 0 or more; pass e.g. {flag}=0 or {flag}=0.0001')
  return number


def fraction(value):
  """A number in [0, 1): a decay or an Adam beta."""
  number = finite(value)
  if not 0 <= number < 1:
    raise ValueError('must be at least 0 and below 1; pass e.g. {flag}=0.9')
  return number


def decay_factor(value):
  """0 (no decay) or a factor above 0 and below 1."""
  number = finite(value)
  if not 0 <= number < 1:
    raise ValueError(
        'a decay factor is above 0 and below 1 (0: no decay); pass e.g. '
        '{flag}=0.94')
  return number


def one_of(choices, lower=False, refused=None):
  """One of `choices` (any case with `lower`); a choice in `refused`
  (choice -> why, and the fix) is a known name that this benchmark
  refuses."""
  refused = dict(refused or {})

  def parse(value):
    choice = value.lower() if lower else value
    if choice in refused:
      raise ValueError(refused[choice])
    if choice not in choices:
      near = difflib.get_close_matches(choice, list(choices), 1, 0.75)
      raise ValueError(
          'invalid choice %r; %spass one of %s (e.g. {flag}=%s)' % (
              value, 'did you mean {flag}=%s? ' % near[0] if near else '',
              ', '.join(choices), near[0] if near else choices[0]))
    return choice
  return parse


def piecewise_schedule(value):
  try:
    lr_schedule.parse_piecewise_schedule(value, flag='{flag}')
  except lr_schedule.ScheduleError as e:
    raise ValueError(str(e))
  return value


RATE_UNITS = (('gbit', 10**9), ('mbit', 10**6), ('kbit', 10**3), ('bit', 1))


def link_rate(value):
  """A link speed as `tc` writes it (200mbit, 1gbit, 500kbit): bits/s."""
  speed = str(value).strip().lower()
  for unit, scale in RATE_UNITS:
    if speed.endswith(unit):
      try:
        number = float(speed[:-len(unit)])
      except ValueError:
        break
      if number > 0 and number * scale >= 1000:
        return int(number * scale)
      break
  raise ValueError('expected a link speed of at least 1kbit; pass e.g. '
                   '{flag}=200mbit, 1gbit or 500kbit')


def tower_counts(value):
  try:
    counts = [int(t) for t in value.split(',') if t.strip()]
  except ValueError:
    raise ValueError(
        'expected comma-separated integers; pass e.g. {flag}=1,2,4')
  if not counts or min(counts) < 1:
    raise ValueError(
        'expected tower counts of at least 1; pass e.g. {flag}=1,2,4')
  return sorted(set(counts))


def strategy_list(names):
  def parse(value):
    given = [t.strip() for t in value.split(',') if t.strip()]
    unknown = [n for n in given if n not in names]
    if not given or unknown:
      raise ValueError('unknown strategy %r: choose from %s' % (
          ','.join(unknown) or value, ', '.join(names)))
    return given
  return parse


# --compare_options: the tokens of an option set, joined by '+'.
OPTION_TOKENS = ('plain', 'fp16', 'fp16_auto', 'bpps<N>', 'relaxed')
# The flags an option set sets: not given beside --compare_options.
OPTION_FLAGS = ('use_fp16', 'fp16_enable_auto_loss_scale',
                'backward_passes_per_step', 'variable_consistency')


def option_set_tokens(name):
  """The tokens of one option set, e.g. 'fp16+bpps4' -> ['fp16', 'bpps4'].

  Raises:
    ValueError: a token that is not one of OPTION_TOKENS (bpps<N>: N a
      whole number of at least 1), 'plain' beside another token, two
      tokens of one option, or an empty set.
  """
  fix = ('each option set is plain, fp16, fp16_auto, bpps<N> '
         '(backward_passes_per_step=N, N at least 1) or relaxed, several '
         'joined by +; pass e.g. {flag}=plain,fp16,bpps4,fp16+relaxed')
  tokens = name.split('+')
  kinds = []
  for token in tokens:
    match = re.match(r'^bpps(\d+)$', token)
    if match and int(match.group(1)) >= 1:
      kinds.append('bpps')
    elif match:
      raise ValueError('%r in the set %r: bpps<N> needs N at least 1; %s' % (
          token, name, fix))
    elif token in ('plain', 'fp16', 'fp16_auto', 'relaxed'):
      kinds.append('fp16' if token.startswith('fp16') else token)
    else:
      raise ValueError('unknown option %r in the set %r: %s' % (
          token, name, fix))
  if 'plain' in kinds and len(kinds) > 1:
    raise ValueError(
        'the set %r: plain means no option and stands alone; %s' % (name, fix))
  twice = sorted(set(k for k in kinds if kinds.count(k) > 1))
  if twice:
    raise ValueError('the set %r sets %s twice; keep one of them: %s' % (
        name, twice[0], fix))
  return tokens


def option_set_list(value):
  names = [t.strip() for t in value.split(',')]
  if not any(names):
    raise ValueError(
        'no option set; pass e.g. {flag}=plain,fp16,bpps4,relaxed')
  seen = []
  for name in names:
    option_set_tokens(name)
    if name in seen:
      raise ValueError('the set %r is given twice; give each option set '
                       'once, e.g. {flag}=plain,fp16' % name)
    seen.append(name)
  return names
