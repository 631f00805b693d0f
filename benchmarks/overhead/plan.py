"""What the overhead benchmark measures: the strategies and their twins'
labels, the variable kinds and their goals, the workloads, the plans, and
the tolerance of the check that a twin computes what its strategy does.
"""

import results_plan  # RESULTS.md's workloads, in benchmarks/.

STRATEGIES = ('independent', 'parameter_server', 'replicated')
KINDS = ('resource', 'ref')
GOALS = {'resource': 1.05, 'ref': 1.10}
WORKLOADS = ('lenet', 'resnet50_vars')
BATCH_SIZE = results_plan.BATCH_SIZE

# What a run measures: `cells`, one process each, (workload, towers, kind);
# per process, every strategy and its twin take turns for `rounds` rounds
# of `steps` steps each, after `warmup` untimed steps.
# Resource variables at every tower count; ref variables (the 1.10x goal)
# at 2 and 4, since a cell of resnet50_vars at 8 towers takes minutes to
# build for each variable kind on 2 cores.
FULL = dict(cells=[(w, k, kind) for kind in KINDS for w in WORKLOADS
                   for k in ((2, 4, 8) if kind == 'resource' else (2, 4))],
            rounds=9, steps=4, warmup=2)
QUICK = dict(cells=[(w, 2, kind) for kind in KINDS for w in WORKLOADS],
             rounds=4, steps=2, warmup=1)

# Steps of the equality check, and its float32 tolerance.
CHECK_STEPS = 2
CHECK_RTOL = 1e-5
CHECK_ATOL = 1e-6


def library_label(strategy):
  return strategy


def twin_label(strategy):
  return strategy + ' twin'


def candidate_labels():
  """Every candidate of one measurement, each strategy beside its twin."""
  return [label for strategy in STRATEGIES
          for label in (library_label(strategy), twin_label(strategy))]
