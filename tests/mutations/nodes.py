"""Prefixes of the pytest node ids that many entries name."""

SEED_BUGS = 'tests/test_seed_bugs.py::'
PLACEMENT = 'tests/test_placement_graphs.py::'
ORDERING = 'tests/test_ordering.py::'
ALLREDUCE_ALGORITHMS = 'tests/allreduce/test_allreduce_algorithms.py::'
ALLREDUCE_SPEC = 'tests/allreduce/test_allreduce_spec.py::'
ALLREDUCE_PACKING = 'tests/allreduce/test_allreduce_packing.py::'
ALLREDUCE_WORKERS = 'tests/allreduce/test_allreduce_workers.py::'
ALL_REDUCE_FLAGS = 'tests/benchmark/training/test_all_reduce_flags.py::'
