"""The CNN benchmark that drives every strategy: models, harness, CLI.

Run it with `python -m variable_mgr.benchmark` or `variable_mgr_benchmark`;
`--help` lists the flags (tf_cnn_benchmarks' names where they overlap).
"""
