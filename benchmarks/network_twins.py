#!/usr/bin/env python
"""tf.distribute's twins of the cluster strategies, one task a process.

    python benchmarks/network_twins.py mwms --job_name=worker --task_index=0 \
        --worker_hosts=10.77.0.1:2222,10.77.0.2:2222 --output=w0.json \
        --model lenet --batch_size 8 --num_batches 10 --num_warmup_batches 2

`run_network_benchmarks.py` starts these tasks as it starts the benchmark's
own: through `launcher.LocalCluster` (its `task_command`), each task in a
network namespace of its own, with the flags a cluster task gets
(`--job_name --task_index --ps_hosts --worker_hosts --output`). A worker
writes the same results JSON as the benchmark's workers (`images_per_sec`,
`losses`), so that the driver reads both alike. TensorFlow 2 only.

Both twins build the benchmark's own model (`catalog.get_model(name).build`,
the synthetic batch of `harness.synthetic_inputs`, the model's learning
rate, plain SGD), so that variables, batch and gradients are those of the
benchmark's cell beside them:

- `mwms`: `tf.distribute.MultiWorkerMirroredStrategy` (ring collectives),
  the twin of `collective_all_reduce`. A custom loop in `tf.function`:
  every variable is created once under the strategy's scope (mirrored,
  worker 0's initial values broadcast); a step computes the gradients in
  the replica context, all-reduces them (mean over every worker, as
  collective_all_reduce applies), and updates every worker's copies in the
  cross-replica context (`merge_call` + `extended.update`). No PS task.
- `pss`: `tf.compat.v1.distribute.experimental.ParameterServerStrategy`
  in graph mode with a `tf.compat.v1.Session` on the worker's server: the
  variables on the PS tasks (its `replica_device_setter`, round-robin by
  variable, not by bytes), `GradientDescentOptimizer` under
  `extended.call_for_each_replica`. It is asynchronous between workers (the
  strategy has no cross-worker barrier), the twin of
  `parameter_server --cross_replica_sync=false`. The strategy refuses
  eager execution (`scope()` and `run()` raise NotImplementedError when
  executing eagerly; its docstring says it "only works with the Estimator
  API"), but in a graph it builds and trains; `run()` returns None in
  TF 2.21 (it drops its result), hence `call_for_each_replica`. A PS task
  serves its variables until every worker has put a token into its `done`
  queue.
"""

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
if ROOT not in sys.path:
  sys.path.insert(0, ROOT)
if HERE not in sys.path:
  sys.path.insert(0, HERE)

SHAPES_ENV = 'VARIABLE_MGR_RESNET50_SHAPES'
SEED = 1234
DONE_QUEUE = 'network_twin_done_ps_%d'


def parse(argv):
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('twin', choices=('mwms', 'pss'))
  parser.add_argument('--job_name', required=True)
  parser.add_argument('--task_index', type=int, required=True)
  parser.add_argument('--ps_hosts', default='')
  parser.add_argument('--worker_hosts', required=True)
  parser.add_argument('--output')
  parser.add_argument('--model', default='lenet')
  parser.add_argument('--batch_size', type=int, default=8)
  parser.add_argument('--num_batches', type=int, default=10)
  parser.add_argument('--num_warmup_batches', type=int, default=2)
  parser.add_argument('--startup_timeout_secs', type=float, default=300.0)
  return parser.parse_args(argv)


def hosts(text):
  return [h for h in text.split(',') if h]


def get_model(name):
  """The benchmark's model `name`; resnet50_vars registered from the shapes
  file SHAPES_ENV names, as run_network_benchmarks.py's tasks do."""
  from variable_mgr.benchmark.models import catalog  # pylint: disable=g-import-not-at-top
  if name == 'resnet50_vars' and name not in catalog.MODELS:
    import run_benchmarks  # pylint: disable=g-import-not-at-top
    with open(os.environ[SHAPES_ENV]) as f:
      run_benchmarks.register_resnet50_vars([tuple(s) for s in json.load(f)])
  return catalog.get_model(name)


def write_result(args, step_secs, losses, build_seconds):
  mean = sum(step_secs) / len(step_secs)
  result = {'task': 'worker:%d' % args.task_index,
            'images_per_sec': args.batch_size / mean,
            'step_secs': step_secs, 'losses': losses,
            'final_loss': losses[-1], 'build_seconds': build_seconds}
  with open(args.output, 'w') as f:
    json.dump(result, f)
  print('total images/sec: %.2f' % result['images_per_sec'])


def timed_steps(args, step):
  """Runs `step()` (returns the loss) num_warmup_batches + num_batches
  times; returns the timed steps' seconds and losses."""
  secs, losses = [], []
  for i in range(-args.num_warmup_batches, args.num_batches):
    if i == 0:
      print('Done warm up')
    start = time.time()
    loss = float(step())
    if i >= 0:
      secs.append(time.time() - start)
      losses.append(loss)
      print('%d\t%.3f s\t%.3f' % (i + 1, secs[-1], loss))
  return secs, losses


# -- MultiWorkerMirroredStrategy ---------------------------------------------


def run_mwms(args):
  workers = hosts(args.worker_hosts)
  os.environ['TF_CONFIG'] = json.dumps({
      'cluster': {'worker': workers},
      'task': {'type': 'worker', 'index': args.task_index}})
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from variable_mgr.benchmark.training import harness  # pylint: disable=g-import-not-at-top
  strategy = tf.distribute.MultiWorkerMirroredStrategy(
      communication_options=tf.distribute.experimental.CommunicationOptions(
          implementation=tf.distribute.experimental.CommunicationImplementation
          .RING))
  model = get_model(args.model)
  images, labels = harness.synthetic_inputs(model, args.batch_size, SEED,
                                            args.task_index)
  created = {}

  def getter(next_getter, name, *a, **kw):
    if name not in created:
      created[name] = next_getter(name, *a, **kw)
    return created[name]

  def loss_fn():
    with tf.compat.v1.variable_scope('model', custom_getter=getter):
      return model.build(images, labels, is_training=True)

  start = time.time()
  with strategy.scope():
    loss_fn()  # Creates the mirrored variables (worker 0's values).
  variables = [created[n] for n in sorted(created)]
  rate = model.learning_rate

  def apply(distribution, grads):
    for v, g in zip(variables, grads):
      distribution.extended.update(
          v, lambda var, grad: var.assign_sub(rate * grad), args=(g,))

  def replica_step():
    with tf.GradientTape() as tape:
      loss = loss_fn()
    grads = tape.gradient(loss, variables)
    ctx = tf.distribute.get_replica_context()
    grads = ctx.all_reduce(tf.distribute.ReduceOp.MEAN, grads)
    ctx.merge_call(apply, args=(grads,))
    return loss

  @tf.function
  def step():
    return strategy.experimental_local_results(strategy.run(replica_step))[0]

  build_seconds = time.time() - start
  secs, losses = timed_steps(args, step)
  write_result(args, secs, losses, build_seconds)


# -- ParameterServerStrategy (v1, graph mode) ----------------------------------


def run_pss(args):
  ps, workers = hosts(args.ps_hosts), hosts(args.worker_hosts)
  os.environ['TF_CONFIG'] = json.dumps({
      'cluster': {'ps': ps, 'worker': workers},
      'task': {'type': args.job_name, 'index': args.task_index}})
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from variable_mgr.benchmark.training import harness  # pylint: disable=g-import-not-at-top
  tf1 = tf.compat.v1
  cluster = tf.train.ClusterSpec({'ps': ps, 'worker': workers})
  server = tf.distribute.Server(
      cluster, args.job_name, args.task_index,
      config=tf1.ConfigProto(device_count={'CPU': 1}))

  def done_queue(graph, i):
    with graph.as_default(), tf1.device('/job:ps/task:%d/cpu:0' % i):
      return tf1.FIFOQueue(len(workers), [tf.int32], shapes=[[]],
                           shared_name=DONE_QUEUE % i, name='done_%d' % i)

  if args.job_name == 'ps':
    graph = tf.Graph()
    queue = done_queue(graph, args.task_index)
    with graph.as_default():
      take = queue.dequeue_many(len(workers))
    # Its session sees only this task: it never dials a worker whose server
    # is not up yet (a refused dial leaves gRPC's channel backing off, and
    # the workers' first steps, which read from them, fail).
    config = tf1.ConfigProto(device_filters=[
        '/job:ps/replica:0/task:%d' % args.task_index])
    with tf1.Session(server.target, graph=graph, config=config) as sess:
      sess.run(take)
    return

  model = get_model(args.model)
  graph = tf.Graph()
  start = time.time()
  with graph.as_default():
    strategy = tf1.distribute.experimental.ParameterServerStrategy()
    images, labels = harness.synthetic_inputs(model, args.batch_size, SEED,
                                              args.task_index)
    optimizer = tf1.train.GradientDescentOptimizer(model.learning_rate)
    with strategy.scope():

      def replica_step():
        with tf1.variable_scope('model'):
          loss = model.build(images, labels, is_training=True)
        return loss, optimizer.minimize(loss)

      loss, train = strategy.extended.call_for_each_replica(replica_step)
      loss = strategy.experimental_local_results(loss)[0]
      train = strategy.group(train)
    init = tf1.global_variables_initializer()
    uninitialized = tf1.report_uninitialized_variables()
    dones = [done_queue(graph, i).enqueue(1) for i in range(len(ps))]
    placed = sorted(set(v.device for v in tf1.global_variables()))
  build_seconds = time.time() - start
  print('variables on: %s' % ', '.join(placed))
  config = tf1.ConfigProto(device_count={'CPU': 1})
  config = strategy.update_config_proto(config)
  with tf1.Session(server.target, graph=graph, config=config) as sess:
    if args.task_index == 0:
      sess.run(init)
    give_up = time.time() + args.startup_timeout_secs
    while len(sess.run(uninitialized)):
      if time.time() > give_up:
        raise RuntimeError('the variables were never initialised')
      time.sleep(0.2)
    fetches = {'train': train, 'loss': loss}
    secs, losses = timed_steps(args, lambda: sess.run(fetches)['loss'])
    sess.run(dones)
  write_result(args, secs, losses, build_seconds)


def main(argv=None):
  args = parse(sys.argv[1:] if argv is None else argv)
  from variable_mgr.benchmark.cluster import launcher  # pylint: disable=g-import-not-at-top
  launcher.watch_launcher()
  {'mwms': run_mwms, 'pss': run_pss}[args.twin](args)
  return 0


if __name__ == '__main__':
  sys.exit(main())
