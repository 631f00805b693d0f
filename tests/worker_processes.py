"""Worker scripts of a test, one process each, in a worker-only cluster on
loopback: the tests that run real collectives across processes. The test's
side starts them and reads what they wrote (`run_workers`); a worker's side
serves (`serve`), builds its updates (`train_op`) and runs its session
(`session_config`, `RUN_OPTIONS`)."""

import json
import os
import subprocess
import sys
import time

import numpy as np
import tensorflow as _tf

from variable_mgr.benchmark.runs import in_process
from variable_mgr.strategies import collective_all_reduce

tf = _tf.compat.v1
TIMEOUT_MS = 30000
RUN_OPTIONS = tf.RunOptions(timeout_in_ms=TIMEOUT_MS)


def run_workers(tmp_path, script, workers, arguments, seconds=120,
                cwd=None):
  """Runs `script` once a worker of a cluster of `workers` on loopback
  ports: worker k with `arguments(cluster, k, output)` after the script
  (`cluster` the JSON of the cluster's spec, `output` the .npz file it must
  write). Waits `seconds` a start; the first worker that fails fails the
  test with its log (its peers would wait for it until the deadline); none
  is left running. A port is picked free and bound by the worker only
  later, so another process may take it in between: a worker that says so
  (in_process.PORT_TAKEN) has the whole cluster started again on new
  ports, up to in_process.START_ATTEMPTS times.

  Returns:
    Each worker's arrays: [{name: array}] in worker order.
  """
  outputs = [str(tmp_path / ('worker%d.npz' % k)) for k in range(workers)]
  for attempt in range(in_process.START_ATTEMPTS):
    failed = _run_once(tmp_path, script, workers, arguments, seconds, cwd,
                       outputs)
    if failed is None:
      break
    k, log = failed
    last = attempt == in_process.START_ATTEMPTS - 1
    assert in_process.PORT_TAKEN in log and not last, 'worker %d: %s' % (
        k, log)
  result = []
  for path in outputs:
    with np.load(path) as arrays:
      result.append(dict((name, arrays[name]) for name in arrays.files))
  return result


def _run_once(tmp_path, script, workers, arguments, seconds, cwd, outputs):
  """One start of the cluster; None when every worker ended well, else
  (k, its log) of the first that failed, or of the first still running at
  the deadline."""
  cluster = json.dumps({'worker': [
      '%s:%d' % (in_process.LOOPBACK, p)
      for p in in_process.free_ports(workers)]})
  environ = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2')
  environ.pop('TF_CONFIG', None)
  logs = [open(str(tmp_path / ('worker%d.log' % k)), 'w+')
          for k in range(workers)]
  processes = [subprocess.Popen(
      [sys.executable, script] + arguments(cluster, k, outputs[k]),
      cwd=cwd, env=environ, stdin=subprocess.DEVNULL, stdout=logs[k],
      stderr=subprocess.STDOUT) for k in range(workers)]
  try:
    end = time.time() + seconds
    while time.time() < end:
      statuses = [process.poll() for process in processes]
      for k, status in enumerate(statuses):
        if status not in (None, 0):
          logs[k].seek(0)
          return k, logs[k].read()
      if all(status == 0 for status in statuses):
        return None
      time.sleep(0.2)
    running = [k for k, p in enumerate(processes) if p.poll() is None]
    logs[running[0]].seek(0)
    return running[0], 'still running after %g s: %s' % (
        seconds, logs[running[0]].read())
  finally:
    for process in processes:
      if process.poll() is None:
        process.kill()
        process.wait()
    for log in logs:
      log.close()


class WorkerHost(object):
  """The attributes collective_all_reduce reads, for a worker-only cluster."""

  def __init__(self, cluster, task_index, towers):
    prefix = '/job:worker/replica:0/task:%d' % task_index
    self.cluster = cluster
    self.task_index = task_index
    self.num_workers = len(cluster.job_tasks('worker'))
    self.raw_devices = ['%s/cpu:%d' % (prefix, d) for d in range(towers)]
    self.devices = list(self.raw_devices)
    self.cpu_device = prefix + '/cpu:0'
    self.param_server_device = self.cpu_device
    self.local_parameter_device_flag = 'cpu'
    self.num_gpus = towers


def serve(cluster_json, task_index, towers):
  """Starts worker `task_index`'s server of the cluster `cluster_json` on
  `towers` virtual CPUs; returns it and the worker's host."""
  cluster = tf.train.ClusterSpec(json.loads(cluster_json))
  server = tf.train.Server(
      cluster, job_name='worker', task_index=task_index,
      config=collective_all_reduce.set_collective_group_leader(
          tf.ConfigProto(device_count={'CPU': towers})))
  return server, WorkerHost(cluster, task_index, towers)


def train_op(mgr, apply_devices, state, optimizer):
  """The step's updates: `optimizer` applies each apply device's
  gradients there."""
  training_ops = []
  for i, device in enumerate(apply_devices):
    with tf.device(device):
      mgr.append_apply_gradients_ops(
          state, optimizer, mgr.get_gradients_to_apply(i, state),
          training_ops)
  return tf.group(*training_ops)


def session_config(task_index):
  """Worker `task_index`'s session: its own devices only, a deadline on
  every op, no soft placement, worker 0 the collective group's leader."""
  return collective_all_reduce.set_collective_group_leader(
      tf.ConfigProto(device_filters=['/job:worker/replica:0/task:%d' %
                                     task_index],
                     operation_timeout_in_ms=TIMEOUT_MS,
                     allow_soft_placement=False))
