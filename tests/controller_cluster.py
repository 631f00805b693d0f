"""In-process worker servers on 127.0.0.1 for distributed_all_reduce.

A controller's graph holds the towers of every worker and runs in one
session on worker 0's server. The servers live until the process exits
(TensorFlow cannot stop an in-process server), so one cluster of
MAX_WORKERS workers of MAX_TOWERS virtual CPUs serves every test that needs
no collective; a host uses its first workers. `close` resets the
containers of the workers, so that the next graph's variables start anew.

Collective ops keep a group key's size in the servers for good: a spec with
a `collective` stage gets a cluster of its own (`fresh=True`).
"""

import tensorflow as tf

import variable_mgr
from variable_mgr.benchmark.runs import in_process
from variable_mgr.strategies import collective_all_reduce

tf1 = tf.compat.v1

MAX_WORKERS = 3
MAX_TOWERS = 2
_SHARED = []  # [(cluster dict, servers)] of the shared cluster.


def server_config():
  """A worker server's config: MAX_TOWERS CPUs, worker 0 the collective
  group leader, a deadline on every op."""
  config = tf1.ConfigProto(device_count={'CPU': MAX_TOWERS},
                           operation_timeout_in_ms=60000)
  return collective_all_reduce.set_collective_group_leader(config)


def start_cluster(num_workers=MAX_WORKERS):
  """Starts `num_workers` worker servers; returns their cluster dict."""
  cluster, servers = in_process.start_servers(
      [('worker', num_workers)], lambda job, k: server_config())
  return cluster, servers['worker']


def host(num_workers, towers_per_worker, fresh=False, **host_args):
  """`(ControllerBenchmarkCnn, session target)` over the first
  `num_workers` workers, `towers_per_worker` towers each."""
  if not 1 <= num_workers <= MAX_WORKERS or not (
      1 <= towers_per_worker <= MAX_TOWERS):
    raise ValueError('%d workers of %d towers: at most %d of %d' % (
        num_workers, towers_per_worker, MAX_WORKERS, MAX_TOWERS))
  if fresh:
    cluster, servers = start_cluster(num_workers)
    _keep.append(servers)
  else:
    if not _SHARED:
      _SHARED.append(start_cluster())
    cluster, servers = _SHARED[0]
  used = {'worker': cluster['worker'][:num_workers]}
  return (variable_mgr.ControllerBenchmarkCnn(used, towers_per_worker,
                                              **host_args),
          servers[0].target)


_keep = []  # Fresh clusters' servers, alive until the process exits.


def layout(num_towers):
  """`(workers, towers a worker)` of a conformance run of `num_towers`:
  two workers of half the towers for an even count above 2, else one
  tower a worker."""
  if num_towers > 2 and num_towers % 2 == 0:
    return 2, num_towers // 2
  return num_towers, 1


def close(target):
  """Clears every container of the workers behind `target`."""
  tf1.Session.reset(target)


def benchmark_towers(*flags):
  """The graph of the benchmark's towers (`harness.build_towers`) on a
  controller of 2 workers at made-up addresses, 2 towers each, trivial,
  batch 4, `--all_reduce_spec=xring`, and `flags`; nothing runs."""
  from variable_mgr.benchmark.flags import command_line  # pylint: disable=g-import-not-at-top
  from variable_mgr.benchmark.models import catalog  # pylint: disable=g-import-not-at-top
  from variable_mgr.benchmark.training import harness  # pylint: disable=g-import-not-at-top
  from variable_mgr.benchmark.training import run_config  # pylint: disable=g-import-not-at-top
  controller = variable_mgr.ControllerBenchmarkCnn(
      {'worker': ['h:1', 'h:2']}, 2)
  args = command_line.parse_args(
      ['--model=trivial', '--num_gpus=2', '--batch_size=4',
       '--launch_local_cluster', '--variable_update=distributed_all_reduce',
       '--all_reduce_spec=xring'] + list(flags), environ={})
  config = run_config.from_args(args).resolved()
  with tf.Graph().as_default() as graph:
    mgr = harness.create_manager(config, controller)
    harness.build_towers(config, controller, mgr, catalog.get_model(
        'trivial', config.data_name))
  return graph
