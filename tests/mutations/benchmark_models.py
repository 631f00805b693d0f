"""The benchmark's models and their layers (variable_mgr/benchmark/models/catalog.py,
model_layers.py), away from the batch-norm code.

Entries of tests/mutation_check.py; see its docstring for the keys.
"""

MODELS = 'tests/benchmark/models/test_models.py::'

MUTATIONS = [
    # The L2 term as the plain sum of squares: tf_cnn_benchmarks' (and
    # tf.nn.l2_loss's) has the factor 1/2.
    dict(name='weight-decay-without-the-half',
         path='variable_mgr/benchmark/models/catalog.py',
         old='          [tf.nn.l2_loss(tf.cast(w, tf.float32)) for w in '
             'layers.weights])\n',
         new='          [tf.reduce_sum(tf.square(tf.cast(w, tf.float32))) for w '
             'in layers.weights])\n',
         tests=[MODELS + 'test_loss_is_cross_entropy_plus_weight_decay']),
    # cifar10's trivial model built as the benchmark's own (one affine
    # layer) instead of tf_cnn_benchmarks' trivial_model.
    dict(name='cifar10-trivial-is-the-one-layer-model',
         path='variable_mgr/benchmark/models/catalog.py',
         old="    _upstream('trivial', (32, 32, 3), 10, _upstream_trivial,\n",
         new="    _upstream('trivial', (32, 32, 3), 10, None,\n",
         tests=[MODELS + 'test_upstream_trivial_layers[cifar10-52235]',
                MODELS + 'test_upstream_trivial_is_relu_affine_layers_by_'
                'numpy']),
    # Window and stride swapped: a 2x2 window every 3 pixels, 32 -> 11.
    dict(name='max-pool-window-and-stride-swapped',
         path='variable_mgr/benchmark/models/blocks.py',
         old='  return tf.nn.max_pool(x, [1, size, size, 1], [1, stride, stride, '
             '1],\n',
         new='  return tf.nn.max_pool(x, [1, stride, stride, 1], [1, size, size, '
             '1],\n',
         tests=[MODELS + 'test_cifar10_alexnet_is_the_tutorial_net']),
    # Float16 towers read float32 images: every layer then asks for float32
    # weights.
    dict(name='fp16-towers-read-float32-images',
         path='variable_mgr/benchmark/training/harness.py',
         old='    images = tf.cast(images, tf.float16)\n',
         new='    images = tf.identity(images)\n',
         tests=['tests/benchmark/models/test_float16_models.py::test_resnet20_'
                'float16_step_is_float32s',
                'tests/benchmark/models/test_float16_models.py::test_every_model_'
                'trains_in_float16']),
    # Batch norm in a float16 tower hands on float32.
    dict(name='batch-norm-output-stays-float32',
         path='variable_mgr/benchmark/models/blocks.py',
         old='        dtype)\n    return tf.nn.relu(y) if relu else y\n',
         new='        tf.float32)\n    return tf.nn.relu(y) if relu else y\n',
         tests=['tests/benchmark/models/test_float16_models.py::test_float16_batch_'
                'norm_of_layers_is_float32_inside',
                'tests/benchmark/models/test_float16_models.py::test_resnet20_'
                'float16_step_is_float32s']),
    # The batch's statistics rounded to float16 before the float32 moving
    # statistics take them.
    dict(name='batch-statistics-rounded-to-float16',
         path='variable_mgr/benchmark/models/blocks.py',
         old='      mean, variance = tf.nn.moments(x, [0, 1, 2])\n',
         new='      mean, variance = [tf.cast(tf.cast(m, tf.float16), '
             'tf.float32)\n                        for m in tf.nn.moments('
             'x, [0, 1, 2])]\n',
         tests=['tests/benchmark/models/test_float16_models.py::test_float16_batch_'
                'norm_of_layers_is_float32_inside']),
    # No data set named: the benchmark's own small shapes instead of
    # tf_cnn_benchmarks' synthetic imagenet.
    dict(name='synthetic-default-is-the-small-table',
         path='variable_mgr/benchmark/flags/input_checks.py',
         old='    args.data_name = DEFAULT_DATA_NAME\n',
         new='    pass\n',
         tests=['tests/benchmark/data/test_upstream_data_defaults.py::test_'
                'without_data_flags_the_data_is_synthetic_imagenet']),
    # resnet20 on cifar10 at its base rate, without upstream's schedule.
    dict(name='cifar-resnet-schedule-dropped',
         path='variable_mgr/benchmark/flags/lr_schedule.py',
         old="          (model, data_name) == CIFAR_RESNET_DEFAULT)\n",
         new="          False)\n",
         tests=['tests/benchmark/data/test_upstream_data_defaults.py::test_'
                'resnet20_on_cifar10_follows_upstreams_schedule']),
    # The CIFAR-10 schedule's boundaries from a fractional epoch.
    dict(name='cifar-resnet-boundaries-from-fractional-epochs',
         path='variable_mgr/benchmark/training/optimizers.py',
         old="  return [batches_per_epoch * e for e in lr_schedule.CIFAR_RESNET_"
             "EPOCHS]\n",
         new="  return [int(lr_schedule.EXAMPLES_PER_EPOCH['cifar10'] * e / "
             "global_batch)\n          for e in lr_schedule.CIFAR_RESNET_"
             "EPOCHS]\n",
         tests=['tests/benchmark/data/test_upstream_data_defaults.py::test_'
                'resnet20_on_cifar10_follows_upstreams_schedule']),
]
