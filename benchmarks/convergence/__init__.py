"""The convergence benchmark's pieces
(`benchmarks/run_convergence_benchmarks.py` is its command line, whose
docstring defines every figure and the goal):

- `cells`: what is held fixed, the strategies, a cell and the plans;
- `runs`: the benchmark commands that train and evaluate a cell, run one
  at a time, and the figures read from their output;
- `text`: the report, pure functions of the runs' figures.
"""

from .cells import ASYNCHRONOUS
from .cells import CLUSTER_STRATEGIES
from .cells import Cell
from .cells import DATA_NAME
from .cells import EVAL_IMAGES
from .cells import FLOOR
from .cells import FULL
from .cells import GLOBAL_BATCH
from .cells import GOAL_POINTS
from .cells import LEARNING_RATE
from .cells import LOCAL_STRATEGIES
from .cells import LOSS_STEPS
from .cells import MODEL
from .cells import NUM_PS
from .cells import NUM_WORKERS
from .cells import QUICK
from .cells import REFERENCE
from .cells import SEED
from .cells import describe
from .cells import examples_seen
from .cells import plan_cells
from .cells import update_scale
from .cells import update_text
from .runs import EVAL_BATCH
from .runs import EVAL_TIMEOUT
from .runs import TRAIN_TIMEOUT
from .runs import eval_args
from .runs import eval_figures
from .runs import eval_strategy_flags
from .runs import measure_all
from .runs import parse_accuracy
from .runs import run_cell
from .runs import run_command
from .runs import shown
from .runs import train_args
from .runs import training_figures
from .text import ALIGN
from .text import HEADER
from .text import averaging_local
from .text import detail_lines
from .text import details_file
from .text import in_seed_range
from .text import loss_agreement
from .text import method_lines
from .text import points
from .text import reference_run
from .text import result_lines
from .text import section_lines
from .text import seed_runs
from .text import seed_spread
from .text import summary
from .text import table_rows
from .text import verdict
