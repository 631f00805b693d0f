"""The CNN benchmark that drives every strategy.

Run it with `python -m variable_mgr.benchmark` or `variable_mgr_benchmark`;
`--help` lists the flags (tf_cnn_benchmarks' names where they overlap).
`python -m variable_mgr.benchmark.distributed` runs one task of a cluster.

Its rooms, each importing only the rooms below it (docs/layout.md draws it):

- `cli`, `distributed`, `__main__`: the entry points;
- `cluster/`: a ps/worker cluster on TensorFlow's gRPC runtime;
- `runs/`: a run on one machine, the `--compare` sweep, exit statuses;
- `reports/`: the lines and files a run writes, the scripts' tables;
- `training/`: a run's config, its training graph, optimizer, evaluation;
- `models/` and `data/`: the towers' models and their input;
- `flags/`: the command line, its values and their checks.
"""
