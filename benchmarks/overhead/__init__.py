"""The overhead benchmark's pieces (`benchmarks/run_overhead_benchmarks.py`
is its command line and its measuring processes):

- `plan`: the strategies and their twins' labels, the variable kinds and
  their goals, the workloads, the plans and the check's tolerance;
- `graphs`: each candidate's graph (a strategy through the harness, or its
  twin in plain TensorFlow) and the check that a pair computes the same;
- `text`: OVERHEAD_RESULTS.md and its section of RESULTS.md, from a run's
  figures.

The modules import `results_plan` from `benchmarks/`, which the script puts
on the path.

Importable from here: the plan, its pure figures and the report, as the
tests read them; the rest from its module.
"""

from .graphs import build
from .graphs import check_twin
from .graphs import open_session
from .graphs import prepare
from .graphs import set_kind
from .plan import FULL
from .plan import GOALS
from .plan import KINDS
from .plan import QUICK
from .plan import STRATEGIES
from .plan import candidate_labels
from .plan import library_label
from .plan import twin_label
from .text import results_text
from .text import section_lines

__all__ = [
    'build',
    'check_twin',
    'open_session',
    'prepare',
    'set_kind',
    'FULL',
    'GOALS',
    'KINDS',
    'QUICK',
    'STRATEGIES',
    'candidate_labels',
    'library_label',
    'twin_label',
    'results_text',
    'section_lines',
]
