"""A run on one machine, from parsed flags to its exit status.

`local_run` trains (or evaluates) one config: its host, session and timed
steps; `compare` sweeps `--compare`'s configs through it; `in_process` is
the one-process cluster a local `distributed_replicated` run needs;
`train_dir_lock` keeps one run a `--train_dir`; `interrupted` saves what a
stopped run reached; `exit_status` says how a command ends.

May import every room but `cluster/`, which imports it (a cluster's
controller runs `local_run`'s steps).
"""
