"""The benchmark's models and their layers (variable_mgr/benchmark/models.py,
model_layers.py), away from the batch-norm code.

Entries of tests/mutation_check.py; see its docstring for the keys.
"""

MODELS = 'tests/benchmark/test_models.py::'

MUTATIONS = [
    # The L2 term as the plain sum of squares: tf_cnn_benchmarks' (and
    # tf.nn.l2_loss's) has the factor 1/2.
    dict(name='weight-decay-without-the-half',
         path='variable_mgr/benchmark/models.py',
         old='      loss += weight_decay * tf.add_n([tf.nn.l2_loss(w)\n',
         new='      loss += weight_decay * tf.add_n([tf.reduce_sum(tf.square(w))'
             '\n',
         tests=[MODELS + 'test_loss_is_cross_entropy_plus_weight_decay']),
    # cifar10's trivial model built as the benchmark's own (one affine
    # layer) instead of tf_cnn_benchmarks' trivial_model.
    dict(name='cifar10-trivial-is-the-one-layer-model',
         path='variable_mgr/benchmark/models.py',
         old="    _upstream('trivial', (32, 32, 3), 10, _upstream_trivial),\n",
         new="    _upstream('trivial', (32, 32, 3), 10),\n",
         tests=[MODELS + 'test_upstream_trivial_layers[cifar10-52235]',
                MODELS + 'test_upstream_trivial_is_relu_affine_layers_by_'
                'numpy']),
    # Window and stride swapped: a 2x2 window every 3 pixels, 32 -> 11.
    dict(name='max-pool-window-and-stride-swapped',
         path='variable_mgr/benchmark/model_layers.py',
         old='  return tf.nn.max_pool(x, [1, size, size, 1], [1, stride, stride, '
             '1],\n',
         new='  return tf.nn.max_pool(x, [1, stride, stride, 1], [1, size, size, '
             '1],\n',
         tests=[MODELS + 'test_cifar10_alexnet_is_the_tutorial_net']),
]
