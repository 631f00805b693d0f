"""The benchmark's input: synthetic batches, in-memory sets, ImageNet records.

`datasets` chooses a data set by `--data_name` and builds its tf.data
pipeline on the CPU; `array_datasets` holds the sets kept in memory as
arrays (CIFAR-10's files, scikit-learn's digits), `imagenet_records` reads
ImageNet's TFRecords, with `tfrecord_headers` checking a file's records
without TensorFlow; `dataset_base` is what they share (errors, interface).

Imports only the library and TensorFlow: `training/` and the runs import it.
"""
