"""The convergence benchmark's pieces
(`benchmarks/run_convergence_benchmarks.py` is its command line, whose
docstring defines every figure and the goal):

- `cells`: what is held fixed, the strategies, a cell and the plans;
- `runs`: the benchmark commands that train and evaluate a cell, run one
  at a time, and the figures read from their output;
- `text`: the report, pure functions of the runs' figures.

Importable from here: the plan, its pure figures and the report, as the
tests read them; the rest from its module.
"""

from .cells import Cell
from .cells import FULL
from .cells import GLOBAL_BATCH
from .cells import QUICK
from .cells import REFERENCE
from .cells import SEED
from .cells import describe
from .cells import examples_seen
from .cells import plan_cells
from .cells import update_text
from .runs import eval_args
from .runs import eval_figures
from .runs import eval_strategy_flags
from .runs import measure_all
from .runs import parse_accuracy
from .runs import train_args
from .runs import training_figures
from .text import ALIGN
from .text import HEADER
from .text import detail_lines
from .text import details_file
from .text import loss_agreement
from .text import result_lines
from .text import section_lines
from .text import seed_spread
from .text import summary
from .text import table_rows
from .text import verdict

__all__ = [
    'Cell',
    'FULL',
    'GLOBAL_BATCH',
    'QUICK',
    'REFERENCE',
    'SEED',
    'describe',
    'examples_seen',
    'plan_cells',
    'update_text',
    'eval_args',
    'eval_figures',
    'eval_strategy_flags',
    'measure_all',
    'parse_accuracy',
    'train_args',
    'training_figures',
    'ALIGN',
    'HEADER',
    'detail_lines',
    'details_file',
    'loss_agreement',
    'result_lines',
    'section_lines',
    'seed_spread',
    'summary',
    'table_rows',
    'verdict',
]
