"""In-process clusters start again on new ports when a picked port was
taken before its server could bind it (`in_process.start_servers`)."""

import socket

import pytest
import tensorflow as tf

from variable_mgr.benchmark.runs import in_process

tf1 = tf.compat.v1


def _config(job, task_index):
  del job, task_index
  return tf1.ConfigProto(device_count={'CPU': 1})


@pytest.fixture
def taken_port():
  """A port of 127.0.0.1 that another socket holds, listening."""
  sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
  sock.bind(('127.0.0.1', 0))
  sock.listen(1)
  yield sock.getsockname()[1]
  sock.close()


def _picks(monkeypatch, first):
  """Makes the first pick of free ports return `first`; returns the list
  of every pick made."""
  picks = []
  real = in_process.free_ports

  def free_ports(count):
    ports = first if not picks else real(count)
    picks.append(list(ports))
    return ports

  monkeypatch.setattr(in_process, 'free_ports', free_ports)
  return picks


def test_a_taken_port_starts_the_cluster_again_on_new_ports(
    monkeypatch, taken_port):
  picks = _picks(monkeypatch, [taken_port])
  cluster, servers = in_process.start_servers([('worker', 1)], _config)
  assert len(picks) == 2
  assert cluster == {'worker': ['127.0.0.1:%d' % picks[1][0]]}
  assert picks[1][0] != taken_port
  # The server of the second cluster runs a step.
  with tf.Graph().as_default():
    with tf1.Session(servers['worker'][0].target) as sess:
      assert sess.run(tf.constant(3) * 2) == 6


def test_a_port_taken_every_time_is_tensorflows_error(monkeypatch,
                                                      taken_port):
  monkeypatch.setattr(in_process, 'free_ports', lambda count: [taken_port])
  with pytest.raises(tf.errors.UnknownError, match=in_process.PORT_TAKEN):
    in_process.start_servers([('worker', 1)], _config)
