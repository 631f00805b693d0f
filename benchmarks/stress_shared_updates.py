"""Two updates of one variable at once, with and without the optimizer's lock.

    python benchmarks/stress_shared_updates.py [--rounds 20] [--elements 4000000]

In a cluster, parameter_server and distributed_replicated have every
worker apply its own update to the variables on the PS tasks, so two
updates of one variable can run at once. This runs that case in one
process: two GradientDescent updates of the same zero-initialised
variable (by 1 and by 2, learning rate 1) in one `Session.run`, `--rounds`
times, and counts the elements that do not end at -3 x rounds, for ref and
resource variables, unlocked and locked. Unlocked updates that overlap
lose parts of each other; locked ones cannot. The library refuses an
unlocked optimizer where several workers update shared variables
(`variable_mgr.strategies.parameter_server.check_locking`).

Measured on the development machine (2 cores, shared), 20 rounds of 4M
elements, 5 runs of each generation: ref variables unlocked, 4, 4, 0, 4, 0
elements wrong on TensorFlow 1.15.5 and 16, 32, 0, 16, 0 on 2.21; locked,
and resource variables either way, 0 in every run. A count of 0 unlocked
does not show that the updates are safe: the race needs the two updates
to overlap, which depends on the machine's threads and load (resource
variables' unlocked updates take a shared lock, which does not exclude
another).
"""

import argparse
import os
import sys

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')

import numpy as np  # pylint: disable=g-import-not-at-top
import tensorflow as tf  # pylint: disable=g-import-not-at-top

tf1 = tf.compat.v1


def wrong_elements(kind, locking, rounds, elements):
  """Elements of the variable off the closed form after `rounds` rounds."""
  if kind == 'ref':
    tf1.disable_resource_variables()
  else:
    tf1.enable_resource_variables()
  with tf.Graph().as_default():
    var = tf1.get_variable('v', [elements],
                           initializer=tf1.zeros_initializer())
    updates = []
    for k in (1, 2):
      opt = tf1.train.GradientDescentOptimizer(1.0, use_locking=locking)
      updates.append(opt.apply_gradients([(tf.fill([elements], float(k)),
                                           var)]))
    config = tf1.ConfigProto(inter_op_parallelism_threads=4,
                             intra_op_parallelism_threads=2)
    with tf1.Session(config=config) as sess:
      sess.run(tf1.global_variables_initializer())
      for _ in range(rounds):
        sess.run(updates)
      value = sess.run(var)
  return int(np.sum(value != -3.0 * rounds))


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--rounds', type=int, default=20)
  parser.add_argument('--elements', type=int, default=4000000)
  args = parser.parse_args(argv)
  tf1.disable_eager_execution()
  print('TensorFlow %s, %d rounds of %d elements' % (
      tf.__version__, args.rounds, args.elements))
  for kind in ('ref', 'resource'):
    for locking in (False, True):
      print('%-8s %-8s wrong elements: %d' % (
          kind, 'locked' if locking else 'unlocked',
          wrong_elements(kind, locking, args.rounds, args.elements)))
  return 0


if __name__ == '__main__':
  sys.exit(main())
