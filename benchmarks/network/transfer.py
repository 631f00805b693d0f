"""What a step must transfer, and how long that takes at a rate (pure):
the variables' bytes, the PS placement model, the bounds of the
script's docstring, the floor of a 2-PS/1-PS ratio, and a cell's
estimated wall time."""

from .plan import PARTITIONED
from .plan import PARTITION_MIN_BYTES
from .plan import kind
from .plan import task_count
from .plan import towers
from .timing import cell_steps
from .timing import cell_warmup


def variable_bytes(shapes):
  """Bytes of float32 variables of `shapes`, in creation order."""
  sizes = []
  for shape in shapes:
    n = 4
    for dim in shape:
      n *= dim
    sizes.append(n)
  return sizes


def ps_loads(sizes, num_ps, partition_min_bytes=0):
  """Bytes on each PS task when each variable goes to the least loaded one,
  in creation order (GreedyLoadBalancingStrategy); with
  `partition_min_bytes`, a variable above it is first split into at most
  num_ps slices of at least that size (taken as equal here), each on a
  task of its own (SliceSpreadingStrategy)."""
  loads = [0.0] * num_ps
  for size in sizes:
    parts = 1
    if partition_min_bytes and size > partition_min_bytes:
      parts = max(1, min(num_ps, size // partition_min_bytes))
    free = list(range(num_ps))
    for _ in range(parts):
      task = min(free, key=lambda t: (loads[t], t))
      free.remove(task)
      loads[task] += size / float(parts)
  return loads


def busiest_ps_bytes(sizes, num_ps, partition_min_bytes=0):
  return max(ps_loads(sizes, num_ps, partition_min_bytes))


def bounds(sizes, workers, num_ps, goodput, partition_min_bytes=0):
  """{kind: seconds} of one cell (run_network_benchmarks.py's docstring);
  with no PS task (MultiWorkerMirroredStrategy) B_ps is all of B."""
  total = float(sum(sizes))
  ps = busiest_ps_bytes(sizes, num_ps, partition_min_bytes) if num_ps \
      else total
  bits = 8.0 / goodput
  return {
      'full_duplex': workers * ps * bits,
      'pull_then_push': 2.0 * workers * ps * bits,
      'ring': 2.0 * (workers - 1) / workers * total * bits,
      'overlapped_sync': (workers + 1) * ps * bits,
      'worker_link': 2.0 * total * bits,
  }


def bound_with_c0(strategy_kind, b, c0):
  """The bound with what issue 16's leaves out (run_network_benchmarks.py's
  docstring): `b` a cell's bounds, `c0` its step on unshaped links."""
  if strategy_kind == 'ring':
    return b['ring'] + c0
  if strategy_kind == 'async_ps':
    return max(b['full_duplex'], b['worker_link'] + c0)
  if strategy_kind == 'staged_ps':
    return max(b['full_duplex'], b['worker_link'] / 2.0) + c0
  return max(b['pull_then_push'], b['worker_link']) + c0


def two_ps_floor(strategy_kind, b2, c0_2, step_1):
  """The lowest 2-PS/1-PS ratio a 2-PS cell of bounds `b2` (its unshaped
  step `c0_2`, or None) can reach against a measured 1-PS step `step_1`:
  the 2-PS step's lower bound over it, not counting c0 where it may
  overlap the transfers."""
  c0 = c0_2 or 0.0
  if strategy_kind == 'staged_ps':
    low = max(b2['full_duplex'], b2['worker_link'] / 2.0) + c0
  elif strategy_kind == 'async_ps':
    # c0 left out: the 2-PS steps measured come in under 2 x B / R + c0
    # (c0 holds some transfer too, at the veth's speed).
    low = max(b2['full_duplex'], b2['worker_link'])
  else:
    low = max(b2['pull_then_push'], b2['worker_link'])
  return low / step_1


# Seconds of compute a tower's step of the balanced families' models
# takes on these machines, about (their c0).
COMPUTE_SECS = {'resnet20': 0.17, 'googlenet': 2.5}


def estimate_cell_secs(cell, plan, sizes, goodput=None):
  """A rough wall time of one cell: the tasks' start (TensorFlow's import,
  the graph, the session: about 4 s plus 2.5 s a task on two processors)
  and its steps at 1.2x its bound (0.1 s a step on unshaped links)."""
  steps = cell_steps(plan, cell) + cell_warmup(plan, cell) + 1
  if cell.rate is None:
    step = 0.1
  else:
    b = bounds(sizes, cell.workers, cell.num_ps,
               goodput or 0.94 * cell.rate,
               PARTITION_MIN_BYTES if cell.strategy.endswith(PARTITIONED)
               else 0)
    step = 1.2 * {'sync_ps': b['pull_then_push'],
                  'staged_ps': b['full_duplex'],
                  'async_ps': b['full_duplex'],
                  'ring': b['ring']}[kind(cell.strategy)]
  start = 4.0 + 2.5 * task_count(cell)
  if cell.workload == 'resnet50_vars':
    start += 25.0  # its 161 variables' graphs and the first full pull
  if cell.workload in COMPUTE_SECS:
    # Its variables' graphs; its compute a tower's step (issue 32), added
    # whole to the transfer's.
    start += 10.0
    step += COMPUTE_SECS[cell.workload] * towers(cell.strategy)
  return start + steps * step
