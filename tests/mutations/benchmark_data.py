"""The benchmark's data: ImageNet records, the synthetic and array data sets.

Entries of tests/mutation_check.py; see its docstring for the keys.
"""

DATASETS = 'tests/benchmark/data/test_datasets.py::'

MUTATIONS = [
    dict(name='imagenet-label-1001-accepted',
         path='variable_mgr/benchmark/data/imagenet_records.py',
         old='  in_range = tf.logical_and(label >= 0, label < num_classes)\n',
         new='  in_range = tf.logical_and(label >= 0, label <= num_classes)\n',
         tests=['tests/benchmark/data/test_imagenet_labels.py::test_a_label_outside_'
                'the_classes_names_its_record[validation-1001]']),
    dict(name='imagenet-whole-last-record-called-truncated',
         path='variable_mgr/benchmark/data/imagenet_records.py',
         old='      if end > size:\n',
         new='      if end >= size:\n',
         tests=['tests/benchmark/data/test_damaged_data.py::test_truncation_of_'
                'names_the_record']),
    # -- What every data set shares (dataset_base.py) -------------------------
    # Pixels scaled to [-1, 0] (by 1/255) instead of [-1, 1].
    dict(name='dataset-images-scaled-by-255',
         path='variable_mgr/benchmark/data/dataset_base.py',
         old='  return image * (1.0 / 127.5) - 1.0\n',
         new='  return image * (1.0 / 255.0) - 1.0\n',
         tests=[DATASETS + 'test_digits_validation_images_exact[image_shape0-'
                'NHWC]']),
    # A --data_dir that does not exist is taken: only a file is refused.
    dict(name='dataset-missing-data-dir-accepted',
         path='variable_mgr/benchmark/data/dataset_base.py',
         old='  if not os.path.isdir(data_dir):\n',
         new='  if os.path.isfile(data_dir):\n',
         tests=[DATASETS + 'test_data_dir_missing_or_not_a_directory']),
    # -- CIFAR-10 and digits (array_datasets.py) -------------------------------
    dict(name='cifar-label-10-accepted',
         path='variable_mgr/benchmark/data/array_datasets.py',
         old='  bad = np.flatnonzero((labels < 0) | (labels >= num_classes))\n',
         new='  bad = np.flatnonzero((labels < 0) | (labels > num_classes))\n',
         tests=['tests/benchmark/data/test_damaged_data.py::test_a_cifar_label_'
                'outside_the_classes_is_named']),
    # A row of 3072 bytes read as 32x32 pixels of RGB: it holds the red
    # plane, then the green, then the blue.
    dict(name='cifar-planes-read-as-pixels',
         path='variable_mgr/benchmark/data/array_datasets.py',
         old='  images = data.astype(np.uint8).reshape(-1, 3, 32, 32).transpose('
             '0, 2, 3, 1)\n',
         new='  images = data.astype(np.uint8).reshape(-1, 32, 32, 3)\n',
         tests=[DATASETS + 'test_cifar_validation_exact_in_colour_and_grey']),
    # -- The pipeline (datasets.py) --------------------------------------------
    # NCHW with height and width swapped: square images keep their shape,
    # not their content.
    dict(name='pipeline-nchw-transposes-the-image',
         path='variable_mgr/benchmark/data/datasets.py',
         old='          tf.transpose(images, [0, 3, 1, 2]), labels))\n',
         new='          tf.transpose(images, [0, 3, 2, 1]), labels))\n',
         tests=[DATASETS + 'test_digits_validation_images_exact[image_shape0-'
                'NCHW]']),
    # The class check inverted: a model with more classes than the data is
    # refused, one with fewer (labels past its logits) taken.
    dict(name='pipeline-class-check-inverted',
         path='variable_mgr/benchmark/data/datasets.py',
         old='    if num_classes is not None and num_classes < data.num_classes:'
             '\n',
         new='    if num_classes is not None and num_classes > data.num_classes:'
             '\n',
         tests=[DATASETS + 'test_bad_options_are_refused_before_any_graph']),
    dict(name='pipeline-shard-index-equal-to-count-accepted',
         path='variable_mgr/benchmark/data/datasets.py',
         old='        len(shard) == 2 and 0 <= shard[0] < shard[1]):\n',
         new='        len(shard) == 2 and 0 <= shard[0] <= shard[1]):\n',
         tests=[DATASETS + 'test_bad_shards_are_refused']),
]
