"""The benchmark's data: ImageNet records, the synthetic and array data sets.

Entries of tests/mutation_check.py; see its docstring for the keys.
"""

MUTATIONS = [
    dict(name='imagenet-label-1001-accepted',
         path='variable_mgr/benchmark/imagenet_records.py',
         old='  in_range = tf.logical_and(label >= 0, label < num_classes)\n',
         new='  in_range = tf.logical_and(label >= 0, label <= num_classes)\n',
         tests=['tests/benchmark/test_imagenet_labels.py::test_a_label_outside_'
                'the_classes_names_its_record[validation-1001]']),
    dict(name='imagenet-whole-last-record-called-truncated',
         path='variable_mgr/benchmark/imagenet_records.py',
         old='      if end > size:\n',
         new='      if end >= size:\n',
         tests=['tests/benchmark/test_damaged_data.py::test_truncation_of_'
                'names_the_record']),
]
