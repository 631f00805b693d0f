"""Test setup: graph mode, quiet TensorFlow, and the `gpu` marker.

Tests (never the library) switch TensorFlow 2 to graph mode.
"""

import os

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
# tf.compat.v1.layers on TensorFlow 2.16 and later: Keras 2 from the tf_keras
# package, chosen before TensorFlow is first imported (tests/test_layers.py).
os.environ.setdefault('TF_USE_LEGACY_KERAS', '1')

import pytest  # pylint: disable=g-import-not-at-top
import tensorflow as tf  # pylint: disable=g-import-not-at-top

tf.compat.v1.disable_eager_execution()


def pytest_addoption(parser):
  parser.addoption(
      '--network-cluster', action='store_true',
      help='also run the long namespace cluster tests (network_cluster '
           'marker; Linux and root, else they skip)')
  parser.addoption(
      '--long', action='store_true',
      help='also run the long tests (long marker)')


def pytest_configure(config):
  config.addinivalue_line(
      'markers', 'gpu: needs two or more GPUs; skipped elsewhere, with why.')
  config.addinivalue_line(
      'markers', 'network_cluster: a long run of clusters in network '
      'namespaces; deselected unless pytest gets --network-cluster.')
  config.addinivalue_line(
      'markers', 'long: a test of 15 s or more (a cluster fault waited '
      'out to its deadline, a further case of a cluster or subprocess run) '
      'whose code path a shorter test also takes; deselected unless pytest '
      'gets --long.')


# pytest.ini's limit a test, for the long and network-cluster runs.
LONG_TIMEOUT = 1800


def pytest_collection_modifyitems(config, items):
  for item in items:
    if (item.get_closest_marker('long') or
        item.get_closest_marker('network_cluster')):
      item.add_marker(pytest.mark.timeout(LONG_TIMEOUT))
  if config.getoption('--long'):
    return
  long_runs = [i for i in items if i.get_closest_marker('long')]
  if long_runs:
    config.hook.pytest_deselected(items=long_runs)
    items[:] = [i for i in items if not i.get_closest_marker('long')]


@pytest.fixture(params=['resource', 'ref'])
def variable_kind(request):
  """Runs a test with resource variables (TF 2's default) and with ref
  variables (TF 1.15's default), restoring the default afterwards."""
  resource_default = tf.compat.v1.resource_variables_enabled()
  if request.param == 'ref':
    tf.compat.v1.disable_resource_variables()
  else:
    tf.compat.v1.enable_resource_variables()
  yield request.param
  if resource_default:
    tf.compat.v1.enable_resource_variables()
  else:
    tf.compat.v1.disable_resource_variables()
