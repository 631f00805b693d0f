"""When the network benchmark runs a cell: the order of a round's cells,
and the warm-up and timed steps of a cell (the script's docstring says
why)."""

from variable_mgr.benchmark.reports import measure

from .plan import GOOGLENET
from .plan import kind


def round_order(cells, r, rounds):
  """The order of round `r` (0-based) of `rounds`: odd rounds reversed,
  every pair of rounds rotated by len / (number of pairs) more."""
  order = list(cells)
  if r % 2:
    order.reverse()
  shift = (r // 2) * len(order) // max(1, (rounds + 1) // 2)
  return measure.rotated(order, shift) if order else order


# Steps of about 40 ms: a hiccup of the shared machine would weigh on few.
UNSHAPED_STEPS, UNSHAPED_WARMUP = 20, 3
# googlenet's steps take seconds: its unshaped cells time 6 (its shaped
# cells 4) after the same 2 warm-up steps.
UNSHAPED_WORKLOAD_STEPS = {GOOGLENET: (6, 2)}


def unshaped_steps(workload):
  """(timed, warm-up) steps of `workload`'s unshaped cells."""
  return UNSHAPED_WORKLOAD_STEPS.get(workload,
                                     (UNSHAPED_STEPS, UNSHAPED_WARMUP))


def cell_steps(plan, cell):
  """Timed steps of `cell`: asynchronous cells get `async_steps` (their
  workers drift in and out of phase: more steps average over it), unshaped
  ones `unshaped_steps`."""
  if cell.rate is None:
    return unshaped_steps(cell.workload)[0]
  if kind(cell.strategy) == 'async_ps':
    return plan.get('async_steps', plan['steps'])[cell.workload]
  return plan['steps'][cell.workload]


def cell_warmup(plan, cell):
  """Warm-up steps of `cell` (unshaped cells: `unshaped_steps`)."""
  if cell.rate is None:
    return unshaped_steps(cell.workload)[1]
  return plan['warmup'][cell.workload]
