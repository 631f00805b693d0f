"""What a command line typed: every flag as typed, with its value as typed,
and every token that cannot be a flag of this benchmark.

absl parses the values (`command_line.parse_flags`); this module only reads the
same tokens by absl's rules (`absl.flags.FlagValues.__call__`), so that a
message names a flag as the user typed it (`--seed`, `-nostaged_vars`,
`--learning_rate=.5`) and so that every token that cannot run is reported
at once, before absl parses anything. It changes no token.

absl's rules: a flag is `--name`, `-name`, `--name=value` or
`-name=value`; a flag that is not a boolean and has no `=` takes the next
token as its value, whatever it is (`--tf_random_seed -3`; a next token
that is a flag, `--train_dir --num_batches=2`, is refused here as a
missing value rather than taken for a path); a boolean
without `=` is true, `--noname` false; `--flagfile=FILE` reads flags from
FILE (expanded before this scan); `--` ends the flags, and so does a token
that is not one (this command takes no other arguments).
"""

import collections
import difflib


class Occurrence(collections.namedtuple(
    'Occurrence', 'dest name typed text has_value position')):
  """One flag on the command line.

  Fields:
    dest: the destination its value is read under (`seed`).
    name: the absl flag that parses it (`tf_random_seed`).
    typed: the flag as typed (`--seed`, `-nostaged_vars`).
    text: the value absl parses ('true' for a bare boolean, 'false' for a
      `--no` form; None for a refused flag given without its value).
    has_value: whether a value was typed (`--flag=value`, `--flag value`).
    position: the index of its token in the command line.
  """

  @property
  def given(self):
    """The flag and its value as typed: '--seed=07', '--noxla'."""
    return '%s=%s' % (self.typed, self.text) if self.has_value else (
        self.typed)


def scan(args, flag_values, dests, refused=()):
  """Reads `args` (flagfiles expanded) as absl would parse them.

  Args:
    args: the command line, without the program name.
    flag_values: the absl FlagValues that will parse `args`.
    dests: absl flag name (aliases too) -> destination.
    refused: the names of tf_cnn_benchmarks' flags that this benchmark
      refuses (named so in the message of a malformed `--no` form).

  Returns:
    (occurrences, problems): the flags in order (Occurrence), and
    (position, message) for every token absl would refuse or this command
    cannot take, a one-line message each (an unknown flag, with the
    nearest name; a positional argument; a value after a bare boolean;
    `--noflag=value`; a flag without its value).
  """
  occurrences, problems = [], []
  i = 0
  while i < len(args):
    token = args[i]
    start = i
    i += 1
    if token == '--':
      problems.extend((start + 1 + k, _positional(a))
                      for k, a in enumerate(args[i:]))
      break
    if not token.startswith('-') or token.strip('-') == '':
      problems.append((start, _positional(token)))
      continue
    dashes = '--' if token.startswith('--') else '-'
    name, eq, value = token[len(dashes):].partition('=')
    typed = dashes + name
    if name in flag_values:
      flag = flag_values[name]
      if eq:
        occurrences.append(Occurrence(dests[flag.name], flag.name, typed,
                                      value, True, start))
      elif flag.boolean:
        # absl: true; a word that follows is an argument, not its value.
        if i < len(args) and _is_bool_word(args[i]):
          problems.append((start, (
              '%s %s: a boolean takes its value after =; pass %s=%s (or %s, '
              '%sno%s)' % (typed, args[i], typed, args[i], typed, dashes,
                           name))))
          i += 1
        occurrences.append(Occurrence(dests[flag.name], flag.name, typed,
                                      'true', False, start))
      elif i < len(args) and not _is_flag(args[i], flag_values):
        occurrences.append(Occurrence(dests[flag.name], flag.name, typed,
                                      args[i], True, start))
        i += 1
      elif flag.name in refused:
        # Refused by its name, whatever its value.
        occurrences.append(Occurrence(dests[flag.name], flag.name, typed,
                                      None, False, start))
      else:
        # absl would take the next flag for this one's value.
        problems.append((start, '%s: needs a value; pass %s=VALUE%s' % (
            typed, typed, ' (absl would read %s as its value)' % args[i]
            if i < len(args) else '')))
      continue
    negated = name[2:] if name.startswith('no') and len(name) > 2 else None
    if negated in flag_values and flag_values[negated].boolean:
      flag = flag_values[negated]
      if eq:
        problems.append((start,
            '%s: the --no form of a boolean takes no value; %s' % (
                token, 'and %s%s is a tf_cnn_benchmarks flag this benchmark '
                'does not support; drop it' % (dashes, negated)
                if negated in refused else 'pass %s or %s%s=%s' % (
                    typed, dashes, negated, value))))
      else:
        occurrences.append(Occurrence(dests[flag.name], flag.name, typed,
                                      'false', False, start))
      continue
    if not eq and i < len(args) and not args[i].startswith('-'):
      i += 1  # The unknown flag's value, most likely.
    problems.append((start, _unknown(token, name, flag_values, dests,
                                     refused)))
  return occurrences, problems


def _is_flag(token, flag_values):
  """Whether `token` is a flag rather than a value: `--anything`, or
  `-name` of a flag (`-3` and `-x` stay values, as absl reads them)."""
  if token.startswith('--'):
    return True
  name = token[1:].partition('=')[0]
  return token.startswith('-') and (
      name in flag_values or name[2:] in flag_values and name[:2] == 'no')


def _is_bool_word(token):
  return token.lower() in ('1', '0', 'true', 'false', 't', 'f', 'yes', 'no',
                           'on', 'off')


def _positional(token):
  return ('%r: not a flag, and the command takes no arguments; drop it, or '
          'give a value after its flag (--flag=value)' % token)


def _unknown(token, name, flag_values, dests, refused):
  """The message of an unknown flag, with the nearest of this benchmark's
  flags (booleans' `--no` forms too)."""
  names = [n for n in dests if n not in refused]
  candidates = ['--' + n for n in names] + [
      '--no' + n for n in names if flag_values[n].boolean]
  near = difflib.get_close_matches('--' + name, candidates, 1, 0.75)
  return ('%s: not a flag of this benchmark, nor of tf_cnn_benchmarks; %s' % (
      token, 'did you mean %s? (--help lists the flags)' % near[0] if near
      else '--help lists the flags'))
