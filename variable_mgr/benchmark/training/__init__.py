"""What one run trains and how: its config, its graph, its optimizer.

`run_config` makes a run's `BenchmarkConfig` from the parsed flags;
`harness` builds the data-parallel training graph of a config through the
library's strategies; `optimizers` makes the optimizer and its learning rate
(the schedule at the run's global batch); `evaluation` scores a checkpoint;
`batch_target` says how many batches a resumed run trains;
`memory_estimate` refuses before any graph a run that would not fit.

May import `flags/`, `data/` and `models/`; `reports/`, the runs and
`cluster/` import it.
"""
