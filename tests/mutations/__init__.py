"""The mutation check's entries, one module an area of the code.

Each module exports MUTATIONS, a list of dicts with the keys that
tests/mutation_check.py's docstring describes; MUTATIONS here gathers them
in a fixed order (the order the check runs them), core library first, then
the benchmark. A new entry goes in the module of its area; a new area gets a
module of its own, added to AREAS.
"""

from . import allreduce
from . import benchmark_cluster
from . import benchmark_data
from . import benchmark_flags
from . import benchmark_models
from . import benchmark_reports
from . import benchmark_run
from . import ordering
from . import placement
from . import seed
from . import slips
from . import strategies
from . import training_options

AREAS = [placement, seed, strategies, ordering, training_options, allreduce,
         benchmark_run, benchmark_data, benchmark_models, benchmark_reports,
         benchmark_flags, benchmark_cluster, slips]

MUTATIONS = [m for area in AREAS for m in area.MUTATIONS]
