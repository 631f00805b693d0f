"""A cosmic-ray session filter: skips mutants that only change a message.

    python3 tests/mutants/filter_messages.py SESSION.sqlite

A mutant is skipped (cosmic-ray's SKIPPED outcome, with the reason as its
output) when it lies in a docstring, in a `raise` statement (the error's
class and the text it is built from), in a string's formatting (`'...' %
x`, an f-string, `'...'.format(...)`) or in the arguments of a call that
only writes text (print, a logger's or tf.compat.v1.logging's methods,
warnings.warn), or an error class's call of its base's `__init__` (the
message it passes). The condition that decides whether to raise or log is not
skipped: that is behaviour.
"""

import ast
import functools
import sys

from cosmic_ray.work_db import WorkDB
from cosmic_ray.work_db import use_db
from cosmic_ray.work_item import WorkerOutcome
from cosmic_ray.work_item import WorkResult

LOG_METHODS = frozenset(['debug', 'info', 'warning', 'warn', 'error',
                         'exception', 'critical', 'log', 'vlog'])


def _is_text_call(node):
  func = node.func
  if isinstance(func, ast.Name):
    return func.id == 'print'
  if not isinstance(func, ast.Attribute):
    return False
  if func.attr == 'format' and isinstance(func.value, ast.Constant) and (
      isinstance(func.value.value, str)):
    return True
  if func.attr in LOG_METHODS:
    owner = ast.unparse(func.value) if hasattr(ast, 'unparse') else ''
    return owner.endswith(('logging', 'log', 'logger', 'LOG', 'warnings'))
  return False


def _span(node, why):
  return ((node.lineno, node.col_offset),
          (node.end_lineno, node.end_col_offset), why)


def message_spans(source):
  """[(start, end, why)] of the message-only regions of `source`
  ((line, column) pairs, lines from 1, as cosmic-ray's positions)."""
  spans = []
  for node in ast.walk(ast.parse(source)):
    if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef,
                         ast.ClassDef)):
      body = node.body
      if body and isinstance(body[0], ast.Expr) and isinstance(
          body[0].value, ast.Constant) and isinstance(body[0].value.value,
                                                      str):
        spans.append(_span(body[0], 'docstring'))
    if isinstance(node, ast.ClassDef) and node.name.endswith(
        ('Error', 'Exception')):
      for inner in ast.walk(node):
        if isinstance(inner, ast.Call) and isinstance(
            inner.func, ast.Attribute) and inner.func.attr == '__init__':
          spans.append(_span(inner, 'an error\'s message'))
    if isinstance(node, ast.Raise):
      spans.append(_span(node, 'an error raised'))
    elif isinstance(node, ast.JoinedStr):
      spans.append(_span(node, 'an f-string'))
    elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and (
        isinstance(node.left, ast.Constant) and
        isinstance(node.left.value, str)):
      spans.append(_span(node, 'a string formatted'))
    elif isinstance(node, ast.Call) and _is_text_call(node):
      spans.append(_span(node, 'text written'))
  return spans


@functools.lru_cache(maxsize=None)
def _spans_of(path):
  with open(path) as f:
    return message_spans(f.read())


def message_reason(mutation):
  """Why `mutation` only changes a message, or None when it may not."""
  start = tuple(mutation.start_pos)
  for begin, end, why in _spans_of(str(mutation.module_path)):
    if begin <= start < end:
      return why
  return None


def filter_session(db: WorkDB):
  skipped = 0
  for item in list(db.pending_work_items):
    reasons = [message_reason(m) for m in item.mutations]
    if all(reasons):
      db.set_result(item.job_id, WorkResult(
          output='message only: ' + reasons[0],
          worker_outcome=WorkerOutcome.SKIPPED))
      skipped += 1
  return skipped


def main(argv=None):
  argv = sys.argv[1:] if argv is None else argv
  if len(argv) != 1:
    raise SystemExit('usage: filter_messages.py SESSION.sqlite')
  with use_db(argv[0], WorkDB.Mode.open) as db:
    print('filter_messages: %d mutants skipped (message only)'
          % filter_session(db))
  return 0


if __name__ == '__main__':
  sys.exit(main())
