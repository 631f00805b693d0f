"""The network benchmark's pieces (`benchmarks/run_network_benchmarks.py` is
its command line; its docstring defines every bound, goal and what the plan
leaves out):

- `plan`: the strategies and their kinds of bound, a cell, the plans, the
  goals, the order of a round and a cell's steps;
- `transfer`: the variables' bytes, the PS placement model, the bounds and
  floors, a cell's estimated time (pure);
- `links`: the goodput, queueing delay and byte counters of the links;
- `runs`: a cluster task, a cell's cluster on a fresh network, the rounds;
- `table`: a result's runs by cell and the figures read off them;
- `goals`: the goals' rows and their causes;
- `text`: the tables and the results' text.

The modules import `run_benchmarks` from `benchmarks/`, which the script
puts on the path.
"""

from .goals import cause_bullets
from .goals import cause_lines
from .goals import goal_cell
from .goals import goal_lines
from .goals import goal_rows
from .goals import link_rows
from .links import GOODPUT_SECS
from .links import measure_goodput
from .links import port_bytes
from .links import queue_delay
from .plan import BATCH
from .plan import BOUND_NAMES
from .plan import Cell
from .plan import DIAGNOSTICS
from .plan import FULL
from .plan import GBIT
from .plan import GOALS
from .plan import GOAL_RATE
from .plan import GOAL_WORKERS
from .plan import GOAL_WORKLOAD
from .plan import MBIT
from .plan import NO_PROBE
from .plan import NO_PROBE_FLAG
from .plan import NO_PROBE_SECS
from .plan import OWN
from .plan import PARTITIONED
from .plan import PARTITION_MIN_BYTES
from .plan import PSS
from .plan import PS_STRATEGIES
from .plan import QUICK
from .plan import STRATEGIES
from .plan import TWINS
from .plan import TWO_PS_GOAL
from .plan import UNSHAPED_1PS
from .plan import UNSHAPED_2PS
from .plan import UNSHAPED_STEPS
from .plan import UNSHAPED_WARMUP
from .plan import base
from .plan import cell_steps
from .plan import cell_warmup
from .plan import describe
from .plan import full_cells
from .plan import key
from .plan import kind
from .plan import layout
from .plan import num_ps_of
from .plan import quick_cells
from .plan import round_order
from .plan import task_count
from .runs import SHAPES_ENV
from .runs import TASK_SCRIPT
from .runs import TWINS_SCRIPT
from .runs import cell_flags
from .runs import measure_all
from .runs import run_cell
from .runs import task_main
from .runs import workload_shapes
from .table import Table
from .table import cell_phase
from .table import link_mb
from .table import median_bound
from .table import median_of
from .table import median_spread
from .table import ms
from .table import ms_spread
from .table import phase_distance
from .table import step_scale
from .table import x_spread
from .table import x_verdict
from .text import cell_rows
from .text import display_order
from .text import goodput_text
from .text import method_lines
from .text import rounds_done
from .text import section_lines
from .text import twin_rows
from .transfer import bound_with_c0
from .transfer import bounds
from .transfer import busiest_ps_bytes
from .transfer import estimate_cell_secs
from .transfer import ps_loads
from .transfer import two_ps_floor
from .transfer import variable_bytes
