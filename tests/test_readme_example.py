"""The library example: docs/harness-protocol.md shows examples/train_towers.py
whole and README.md a part of it, line for line; it runs under every local
strategy and a one-worker cluster, ref and resource variables alike, and
trains as NumPy does; run as a script, it prints the same losses."""

import importlib.util
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = os.path.join(ROOT, 'examples', 'train_towers.py')
BEGIN = '<!-- begin examples/train_towers.py -->'
END = '<!-- end examples/train_towers.py -->'
EXCERPT_BEGIN = '<!-- begin excerpt of examples/train_towers.py -->'
EXCERPT_END = '<!-- end excerpt of examples/train_towers.py -->'


def _load_example():
  spec = importlib.util.spec_from_file_location('train_towers', EXAMPLE)
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


example = _load_example()


def _python_block(path, begin, end):
  """The one ```python block between the markers `begin` and `end`."""
  with open(os.path.join(ROOT, path)) as f:
    text = f.read()
  assert text.count(begin) == 1 and text.count(end) == 1, path
  block = text.split(begin, 1)[1].split(end, 1)[0]
  match = re.match(r'\s*```python\n(.*)```\s*$', block, re.S)
  assert match, '%s: the example is not one ```python block' % path
  return match.group(1)


def test_the_docs_show_the_example_file_verbatim():
  block = _python_block(os.path.join('docs', 'harness-protocol.md'), BEGIN,
                        END)
  with open(EXAMPLE) as f:
    assert block == f.read(), (
        'docs/harness-protocol.md and examples/train_towers.py differ: copy '
        'the file into the block')


def test_the_readme_excerpt_is_a_run_of_the_file_lines():
  """README.md shows consecutive lines of the file, dedented as a whole."""
  excerpt = _python_block('README.md', EXCERPT_BEGIN, EXCERPT_END)
  want = excerpt.splitlines()
  assert len(want) >= 10, 'README: the excerpt is too short to show anything'
  with open(EXAMPLE) as f:
    lines = f.read().splitlines()
  runs = [textwrap.dedent('\n'.join(lines[i:i + len(want)])).splitlines()
          for i in range(len(lines) - len(want) + 1)]
  assert want in runs, (
      'README.md\'s excerpt is not a run of examples/train_towers.py\'s lines: '
      'copy it from the file again')


def _loss_and_grads(w, b, x, y):
  """One tower's mean squared error and its gradients, in float64."""
  r = x.dot(w) + b - y
  n = len(x)
  return np.mean(r ** 2), 2.0 / n * x.T.dot(r), 2.0 / n * r.sum(axis=0)


def reference(initial, steps, independent=False, stale=False):
  """NumPy's losses and tower 0's final (w, b) for the example's model."""
  x, y = (a.astype(np.float64) for a in example.make_data())
  towers = example.NUM_TOWERS
  lr = example.LEARNING_RATE
  # One (w, b) a tower for independent, one shared otherwise.
  copies = towers if independent else 1
  params = [[initial['w'].astype(np.float64), initial['b'].astype(np.float64)]
            for _ in range(copies)]
  previous = [list(p) for p in params]
  losses = []
  for _ in range(steps):
    # Staged reads see the weights of the step before (w[-1] = w[0]).
    read = previous if stale else params
    results = [_loss_and_grads(read[d % copies][0], read[d % copies][1],
                               x[d], y[d]) for d in range(towers)]
    losses.append(np.mean([r[0] for r in results]))
    previous = [list(p) for p in params]
    if independent:
      params = [[w - lr * results[d][1], b - lr * results[d][2]]
                for d, (w, b) in enumerate(params)]
    else:
      gw = np.mean([r[1] for r in results], axis=0)
      gb = np.mean([r[2] for r in results], axis=0)
      params = [[params[0][0] - lr * gw, params[0][1] - lr * gb]]
  return losses, {'w': params[0][0], 'b': params[0][1]}


STEPS = 4
CASES = [('replicated', False), ('parameter_server', False),
         ('parameter_server', True), ('independent', False),
         ('distributed_replicated', False)]


@pytest.mark.parametrize('strategy,staged', CASES)
def test_the_example_trains_as_numpy_does(strategy, staged, variable_kind):
  del variable_kind
  initial, losses, final = example.train(strategy, staged, STEPS)
  assert sorted(initial) == ['b', 'w']
  want_losses, want = reference(initial, STEPS,
                                independent=strategy == 'independent',
                                stale=staged)
  np.testing.assert_allclose(losses, want_losses, rtol=1e-5)
  for name in ('w', 'b'):
    np.testing.assert_allclose(final[name], want[name], rtol=1e-5, atol=1e-6,
                               err_msg=name)
  # The model trains: the last loss is well below the first.
  assert losses[-1] < 0.5 * losses[0]


def test_the_example_runs_as_a_script():
  """`python examples/train_towers.py`, as README says, prints the losses
  of the same run in this process (resource variables, TF 2's default)."""
  env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep +
             os.environ.get('PYTHONPATH', ''))
  result = subprocess.run([sys.executable, EXAMPLE], cwd=ROOT, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=300, check=False)
  assert result.returncode == 0, result.stderr[-3000:]
  printed = [float(v) for v in
             re.findall(r'^step \d+: loss (\S+)$', result.stdout, re.M)]
  assert len(printed) == 5, result.stdout
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  resource = tf.compat.v1.resource_variables_enabled()
  tf.compat.v1.enable_resource_variables()
  try:
    _, losses, _ = example.train('replicated', False, 5)
  finally:
    if not resource:
      tf.compat.v1.disable_resource_variables()
  np.testing.assert_allclose(printed, losses, rtol=1e-5)
