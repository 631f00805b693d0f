"""The network benchmark's pieces (`benchmarks/run_network_benchmarks.py` is
its command line; its docstring defines every bound, goal and what the plan
leaves out):

- `plan`: the strategies and their kinds of bound, a cell, the plans and
  their named subsets, the goals, the order of a round and a cell's steps;
- `transfer`: the variables' bytes, the PS placement model, the bounds and
  floors, a cell's estimated time (pure);
- `links`: the goodput, queueing delay and byte counters of the links, and
  the time a link carries data (its counters sampled through the steps);
- `runs`: a cluster task, a cell's cluster on a fresh network, the rounds;
- `table`: a result's runs by cell and the figures read off them;
- `goals`: the goals' rows and their causes;
- `allreduce`: distributed_all_reduce beside collective_all_reduce
  against the ring bound (issue 26);
- `text`: the tables and the results' text.

The modules import `run_benchmarks` from `benchmarks/`, which the script
puts on the path.

Importable from here: the plan, its pure figures and the report, as the
tests read them; the rest from its module.
"""

from .goals import GOALS
from .goals import goal_cell
from .goals import goal_rows
from .plan import Cell
from .plan import FULL
from .plan import GBIT
from .plan import MBIT
from .plan import PARTITIONED
from .plan import PS_STRATEGIES
from .plan import QUICK
from .plan import STRATEGIES
from .plan import describe
from .plan import full_cells
from .plan import quick_cells
from .plan import subset_plan
from .runs import measure_all
from .table import Table
from .table import ms_spread
from .table import phase_distance
from .table import x_spread
from .table import x_verdict
from .text import section_lines
from .timing import round_order
from .transfer import bound_with_c0
from .transfer import bounds
from .transfer import busiest_ps_bytes
from .transfer import estimate_cell_secs
from .transfer import ps_loads
from .transfer import two_ps_floor
from .transfer import variable_bytes

__all__ = [
    'goal_cell',
    'goal_rows',
    'Cell',
    'FULL',
    'GBIT',
    'GOALS',
    'MBIT',
    'PARTITIONED',
    'PS_STRATEGIES',
    'QUICK',
    'STRATEGIES',
    'describe',
    'full_cells',
    'quick_cells',
    'round_order',
    'subset_plan',
    'measure_all',
    'Table',
    'ms_spread',
    'phase_distance',
    'x_spread',
    'x_verdict',
    'section_lines',
    'bound_with_c0',
    'bounds',
    'busiest_ps_bytes',
    'estimate_cell_secs',
    'ps_loads',
    'two_ps_floor',
    'variable_bytes',
]
