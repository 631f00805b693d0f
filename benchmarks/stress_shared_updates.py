"""Two updates of one variable at once, with and without the optimizer's lock.

    python benchmarks/stress_shared_updates.py [--rounds 20] [--elements 4000000]

In a cluster, parameter_server and distributed_replicated have every
worker apply its own update to the variables on the PS tasks, so two
updates of one variable can run at once. This runs that case in one
process: two GradientDescent updates of the same zero-initialised
variable (by 1 and by 2, learning rate 1) in one `Session.run`, `--rounds`
times, and counts the elements that do not end at -3 x rounds, for ref and
resource variables, unlocked and locked, and for three forms of the
gradient: dense, sparse (IndexedSlices of every row, a gather's gradient)
and sparse made dense on the variable's device. Updates that overlap
without excluding each other lose parts of each other. The library
refuses an unlocked optimizer where several workers update shared
variables, and makes a resource variable's sparse gradient dense there
(`variable_mgr.strategies.parameter_server.locked_updates`).

Measured on the development machine (2 cores, shared), 20 rounds of 4M
elements, 2 runs of each generation (TensorFlow 1.15.5; 2.21), elements
wrong:

| gradient | variable | unlocked | locked |
|---|---|---|---|
| dense | ref | 1359332, 404604; 2267376, 8 | 0 in every run |
| dense | resource | 0 in every run | 0 in every run |
| sparse | ref | 290, 107; 67035, 26593 | 0 in every run |
| sparse | resource | 36102, 35280; 13533, 12943 | **57548, 56672; 130080, 690** |
| sparse made dense | resource | 0 in every run | 0 in every run |

A resource variable's sparse update (ResourceScatterAdd) has no
`use_locking`: it takes the variable's lock shared whatever the optimizer
asks, hence the locked column's loss. A count of 0 does not show that
updates are safe: the race needs the two to overlap, which depends on the
machine's threads and load (a resource variable's unlocked dense update
also takes the lock shared).
"""

import argparse
import os
import sys

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')

import numpy as np  # pylint: disable=g-import-not-at-top
import tensorflow as tf  # pylint: disable=g-import-not-at-top

tf1 = tf.compat.v1


FORMS = ('dense', 'sparse', 'sparse made dense')


def _gradient(value, elements, form):
  """A gradient of `value` for every element, in `form` (of FORMS): a
  tensor, IndexedSlices of every row (a gather's gradient, one element a
  row), or those IndexedSlices made a tensor on the variable's device."""
  if form == 'dense':
    return tf.fill([elements], value)
  slices = tf.IndexedSlices(tf.fill([elements, 1], value), tf.range(elements),
                            tf.constant([elements, 1]))
  return slices if form == 'sparse' else tf.convert_to_tensor(slices)


def wrong_elements(kind, locking, rounds, elements, form='dense'):
  """Elements of the variable off the closed form after `rounds` rounds."""
  if kind == 'ref':
    tf1.disable_resource_variables()
  else:
    tf1.enable_resource_variables()
  with tf.Graph().as_default():
    var = tf1.get_variable('v', [elements] if form == 'dense' else
                           [elements, 1],
                           initializer=tf1.zeros_initializer())
    updates = []
    for k in (1, 2):
      opt = tf1.train.GradientDescentOptimizer(1.0, use_locking=locking)
      updates.append(opt.apply_gradients(
          [(_gradient(float(k), elements, form), var)]))
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
  for form in FORMS:
    for kind in ('ref', 'resource'):
      for locking in (False, True):
        print('%-17s %-8s %-8s wrong elements: %d' % (
            form, kind, 'locked' if locking else 'unlocked',
            wrong_elements(kind, locking, args.rounds, args.elements, form)))
  return 0


if __name__ == '__main__':
  sys.exit(main())
