"""The `--all_reduce_spec` grammar and the all-reduce it describes.

Grammar (no spaces), as tf_cnn_benchmarks' `parse_all_reduce_spec`::

    spec   ::= range (':' limit ':' range)*
    range  ::= stage ('/' stage)?
    stage  ::= name ('#' count)?
    name   ::= nccl | xring | pscpu | psgpu | rechd | hcopy | copy | collective
    limit  ::= digits ('k' | 'K' | 'M' | 'G' | 'T')?
               (an element count, positive, strictly increasing; k and K are
               x 2**10, M x 2**20, G x 2**30, T x 2**40)
    count  ::= digits                         (positive; xring, pscpu, psgpu)

A limit counts elements, not bytes, as upstream's: a tensor of n elements
goes to the first range whose limit is at least n (n <= limit); the last
range takes the rest. Examples:

    'xring'            ring all-reduce of every tensor.
    'xring#2'          two parallel rings, each on half of every tensor.
    'pscpu:32k:xring'  tensors of at most 32768 elements (128 KiB of
                       float32) are summed on the worker CPUs, larger ones
                       go around a ring.
    'psgpu#4'          shuffle through the tower devices, 4 pieces a tensor.
    'nccl/xring'       two stages: NCCL among the devices of each worker,
                       then a ring among one device per worker, whose result
                       is copied back to the worker's devices. With a single
                       worker the second stage has nothing to do and
                       'a/b' equals 'a'.

A worker is a `(job, replica, task)` of the device strings: '/cpu:0' and
'/cpu:1' are one worker; '/job:worker/task:0/cpu:0' and
'/job:worker/task:1/cpu:0' are two.

Names: nccl = `algorithms.nccl`; xring#n = `ring` with n rings;
pscpu#n = `shuffle` through the parameter devices (by default CPU 0 of each
worker) in n pieces; psgpu#n = `shuffle` through the tower devices; rechd =
`halving_doubling`; hcopy = `hierarchical_copy`; copy = `copy`;
collective = `collective`.
"""

import collections
import re

import tensorflow as tf

from variable_mgr.allreduce import algorithms
from variable_mgr.allreduce import errors
from variable_mgr.allreduce import layout

# Algorithm names of the grammar, and whether they take a '#count'.
ALGORITHMS = collections.OrderedDict([
    ('collective', False),
    ('copy', False),
    ('hcopy', False),
    ('nccl', False),
    ('pscpu', True),
    ('psgpu', True),
    ('rechd', False),
    ('xring', True),
])

# Upstream's `parse_general_int`: powers of two; only k is case-blind.
_SUFFIXES = {'': 1, 'k': 1 << 10, 'K': 1 << 10, 'M': 1 << 20, 'G': 1 << 30,
             'T': 1 << 40}
_LIMIT = re.compile(r'^([0-9]+)([kKMGT]?)$')
_COUNT = re.compile(r'^[0-9]+$')

Stage = collections.namedtuple('Stage', ['name', 'count'])
Stage.__doc__ = """One algorithm: a grammar name and its '#count' (or None)."""

SpecRange = collections.namedtuple('SpecRange', ['limit', 'stages'])
SpecRange.__doc__ = """Tensors of at most `limit` elements (None: no limit)
not taken by an earlier range are reduced by `stages` (one or two Stage)."""


def parse_spec(spec):
  """Parses an --all_reduce_spec string.

  Args:
    spec: the string, e.g. 'pscpu:32k:xring#2'.

  Returns:
    A list of `SpecRange`, limits strictly increasing, the last one None.

  Raises:
    AllReduceSpecError: the spec is not a string or breaks the grammar; the
      message quotes the bad token and gives its position.
  """
  if not isinstance(spec, str):
    raise errors.AllReduceSpecError(
        spec, 0, spec, 'the spec must be a string such as "xring"')
  fields = []
  position = 0
  for text in spec.split(':'):
    fields.append((text, position))
    position += len(text) + 1
  if len(fields) % 2 == 0:
    text, position = fields[-1]
    raise errors.AllReduceSpecError(
        spec, position, text,
        'a size must be followed by ":" and an algorithm (e.g. '
        '"pscpu:32k:xring")')
  ranges = []
  previous = None
  for f in range(0, len(fields), 2):
    stages = _parse_range(spec, *fields[f])
    limit = None
    if f + 1 < len(fields):
      limit = _parse_limit(spec, *fields[f + 1])
      if previous is not None and limit <= previous:
        raise errors.AllReduceSpecError(
            spec, fields[f + 1][1], fields[f + 1][0],
            'size limits must increase strictly; %d elements is not above '
            'the previous %d' % (limit, previous))
      previous = limit
    ranges.append(SpecRange(limit, stages))
  return ranges


def _parse_range(spec, text, position):
  parts = text.split('/')
  if len(parts) > 2:
    bad = position + len(parts[0]) + len(parts[1]) + 1
    raise errors.AllReduceSpecError(
        spec, bad, '/' + parts[2],
        'a range has at most two stages ("within workers/across workers")')
  stages = []
  for part in parts:
    stages.append(_parse_stage(spec, part, position))
    position += len(part) + 1
  return tuple(stages)


def _parse_stage(spec, text, position):
  name, sep, count_text = text.partition('#')
  if name not in ALGORITHMS:
    raise errors.AllReduceSpecError(
        spec, position, name,
        'expected an algorithm name, one of: %s' % ', '.join(ALGORITHMS))
  if not sep:
    return Stage(name, None)
  count_position = position + len(name) + 1
  if not ALGORITHMS[name]:
    raise errors.AllReduceSpecError(
        spec, position + len(name), '#' + count_text,
        '%r takes no "#count"; only %s do' % (
            name, ', '.join(n for n, c in ALGORITHMS.items() if c)))
  if not _COUNT.match(count_text) or int(count_text) < 1:
    raise errors.AllReduceSpecError(
        spec, count_position, count_text,
        'the count after "#" must be a positive integer (e.g. "xring#2")')
  return Stage(name, int(count_text))


def _parse_limit(spec, text, position):
  match = _LIMIT.match(text)
  if match and int(match.group(1)) >= 1:
    return int(match.group(1)) * _SUFFIXES[match.group(2)]
  reason = ('expected a positive element count with an optional suffix k '
            'or K (x1024), M, G or T (powers of 2), e.g. "32k"')
  if re.match(r'^[0-9]+[mgt]$', text):
    reason += '; write %r (M, G and T are upper case)' % (
        text[:-1] + text[-1].upper())
  raise errors.AllReduceSpecError(spec, position, text, reason)


def _run_stage(stage, tower_tensors, devices, param_devices):
  count = stage.count
  if stage.name == 'nccl':
    return algorithms.nccl(tower_tensors, devices)
  if stage.name == 'xring':
    return algorithms.ring(tower_tensors, devices, num_rings=count or 1)
  if stage.name == 'pscpu':
    return algorithms.shuffle(tower_tensors, devices,
                              param_devices or layout.worker_cpus(devices),
                              num_shards=count)
  if stage.name == 'psgpu':
    return algorithms.shuffle(tower_tensors, devices, devices,
                              num_shards=count)
  if stage.name == 'rechd':
    return algorithms.halving_doubling(tower_tensors, devices)
  if stage.name == 'hcopy':
    return algorithms.hierarchical_copy(tower_tensors, devices)
  if stage.name == 'copy':
    return algorithms.copy(tower_tensors, devices)
  return algorithms.collective(tower_tensors, devices)


def _run_two_stages(stages, towers, devices):
  """`inner/outer`: `inner` within each worker, `outer` across one device
  per worker (device i % local_count for tensor i), then copies back."""
  workers = collections.OrderedDict()
  for d, device in enumerate(devices):
    workers.setdefault(layout.worker_of(device), []).append(d)
  local = [None] * len(devices)
  for members in workers.values():
    reduced = _run_stage(stages[0], [towers[d] for d in members],
                         [devices[d] for d in members], None)
    for d, row in zip(members, reduced):
      local[d] = row
  if len(workers) == 1:
    return local
  groups = list(workers.values())
  count = len(towers[0])
  # Tensors whose representatives coincide are reduced together.
  by_reps = collections.OrderedDict()
  for i in range(count):
    reps = tuple(group[i % len(group)] for group in groups)
    by_reps.setdefault(reps, []).append(i)
  result = [[None] * count for _ in devices]
  for reps, indices in by_reps.items():
    across = _run_stage(stages[1],
                        [[local[r][i] for i in indices] for r in reps],
                        [devices[r] for r in reps], None)
    for group, rep, row in zip(groups, reps, across):
      for i, value in zip(indices, row):
        for d in group:
          if d == rep:
            result[d][i] = value
            continue
          # The control input makes every inner output run (NCCL hangs
          # unless all outputs of one all-reduce run).
          with tf.device(devices[d]), tf.control_dependencies([local[d][i]]):
            result[d][i] = tf.identity(value)
  return result


def build_all_reduce(spec, tower_tensors, devices, param_devices=None):
  """All-reduces `[tower][tensor]` as an --all_reduce_spec says.

  With two towers holding two tensors each::

      [[A, B], [C, D]]  ->  [[A+C, B+D], [A+C, B+D]]

  Args:
    spec: an --all_reduce_spec string or the result of `parse_spec`.
    tower_tensors: `[tower][tensor]`; shapes must be fully defined when the
      spec has more than one range (element counts decide the range).
    devices: one device string per tower.
    param_devices: the devices `pscpu` sums on in a one-stage range; by
      default CPU 0 of each worker among `devices`.

  Returns:
    `[tower][tensor]`: output `[d][i]` is the sum over towers of tensor i,
    on `devices[d]`.

  Raises:
    AllReduceSpecError: `spec` breaks the grammar.
    TowerTensorsError, StaticShapeError, AlgorithmOptionError,
    NcclDeviceError: as raised by the algorithms.
  """
  ranges = parse_spec(spec) if isinstance(spec, str) else list(spec)
  if not ranges:
    raise errors.AllReduceSpecError(spec, 0, '', 'the spec has no ranges')
  towers, devices = layout.check_towers(tower_tensors, devices)
  count = len(towers[0])
  assigned = [[] for _ in ranges]
  for i in range(count):
    if len(ranges) == 1:
      assigned[0].append(i)
      continue
    size = layout.num_elements(towers[0][i])
    for r, spec_range in enumerate(ranges):
      if spec_range.limit is None or size <= spec_range.limit:
        assigned[r].append(i)
        break
  result = [[None] * count for _ in devices]
  for spec_range, indices in zip(ranges, assigned):
    if not indices:
      continue
    subset = [[row[i] for i in indices] for row in towers]
    if len(spec_range.stages) == 1:
      reduced = _run_stage(spec_range.stages[0], subset, devices,
                           param_devices)
    else:
      reduced = _run_two_stages(spec_range.stages, subset, devices)
    for d, row in enumerate(reduced):
      for i, value in zip(indices, row):
        result[d][i] = value
  return result


def all_reduce_fn(spec, param_devices=None):
  """`fn(tower_tensors, devices)` for `build_all_reduce` with this spec.

  The spec is parsed here, so a bad one fails before any graph is built.
  """
  ranges = parse_spec(spec)

  def reduce_fn(tower_tensors, devices):
    return build_all_reduce(ranges, tower_tensors, devices, param_devices)

  return reduce_fn
