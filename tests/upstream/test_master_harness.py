"""tf_cnn_benchmarks master's own harness (`tf_cnn_benchmarks.py`,
`benchmark_cnn.py`, unchanged) with this package in place of its
variable_mgr.py: every `--variable_update` mode runs, twice with the same
losses, and with resource variables (where master's own manager repeats its
numbers) the same losses as master's own.

Master's files are looked for as `benchmarks/upstream_master.py` says
(`$VARIABLE_MGR_UPSTREAM`, else `shared/upstream/tf_cnn_benchmarks` in a
parent directory of the checkout: `../shared` beside a CI clone); the tests
skip where they are absent. One mode runs in the suite; the others, and the
clusters, carry the `long` marker (`benchmarks/run_upstream_master.py`
runs them all).
"""

import math
import os
import sys

import pytest
import tensorflow as tf

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__)))), 'benchmarks'))

import upstream_master  # pylint: disable=g-import-not-at-top,wrong-import-position

UPSTREAM = upstream_master.find_upstream()
TF_MAJOR = int(tf.__version__.split('.')[0])
pytestmark = [
    pytest.mark.skipif(
        UPSTREAM is None,
        reason='master\'s tf_cnn_benchmarks not found (set %s or put '
        'shared/upstream/tf_cnn_benchmarks beside the checkout)' %
        upstream_master.UPSTREAM_ENV),
    pytest.mark.skipif(
        TF_MAJOR < 2,
        reason='master\'s harness needs TensorFlow 2.13 or later (its '
        'models/model.py imports tensorflow.python.ops.variable_v1)')]

MODES = dict((m.name, m) for m in upstream_master.MODES)
# The rest run with --long: the suite keeps to its time (docs/tests.md).
IN_SUITE = ('replicated_copy',)
RESOURCE = ('--use_resource_vars',)
# Master's own manager repeats its losses in these modes with these flags
# (with ref variables, its default, its updates race the backward pass in
# most: see docs/tf-cnn-benchmarks.md); the project must give the same. Not
# here: master's staged parameter server, whose put of the next step's value
# races its update with resource variables too, and its PS clusters, where
# one worker's update races another's reads of the same step (the project
# orders both; master's own numbers then vary from run to run).
SAME_AS_OWN = dict(
    (name, RESOURCE) for name in (
        'independent', 'parameter_server_cpu', 'parameter_server_gpu',
        'replicated_copy', 'replicated_xring', 'replicated_pscpu',
        'replicated_psgpu', 'replicated_hierarchical_copy',
        'replicated_repacking', 'replicated_relaxed', 'distributed_replicated',
        'distributed_all_reduce', 'collective_all_reduce'))


@pytest.fixture(scope='module')
def workdir(tmp_path_factory):
  return upstream_master.prepare(UPSTREAM,
                                 str(tmp_path_factory.mktemp('master')))


def _params():
  for name in MODES:
    marks = [] if name in IN_SUITE else [pytest.mark.long]
    yield pytest.param(name, marks=marks, id=name)


def _losses(workdir, kind, mode, extra=()):
  result = upstream_master.run_mode(workdir, kind, mode, extra=extra)
  assert result.ok, result.output[-4000:]
  assert len(result.losses) == 3, result.output[-4000:]
  assert all(math.isfinite(x) for x in result.losses), result.losses
  return result.losses


@pytest.mark.parametrize('name', list(_params()))
def test_master_harness_runs_the_mode(workdir, name):
  mode = MODES[name]
  first = _losses(workdir, 'project', mode)
  assert _losses(workdir, 'project', mode) == first
  if name in SAME_AS_OWN:
    extra = SAME_AS_OWN[name]
    assert (_losses(workdir, 'project', mode, extra) ==
            _losses(workdir, 'own', mode, extra))
