"""What the benchmark prints and writes, and how its scripts measure.

`output` writes tf_cnn_benchmarks' header, step and result lines and the
`--output` JSON; `compare_chart` draws `--compare`'s chart; `markdown`
writes the tables and verdicts of the `benchmarks/` results files;
`measure` times those scripts' runs (fresh processes, interleaved rounds).

May import `flags/` and `training/` (the header describes the optimizer);
the runs and `cluster/` import it.
"""
