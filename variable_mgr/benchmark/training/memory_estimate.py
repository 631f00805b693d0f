"""The memory a training run on one machine needs, estimated before its
graph is built, against the memory this process can still take.

An estimate, in bytes, of the peak resident set of a run:

- TensorFlow and Python: this process's resident bytes now (TensorFlow is
  loaded when the check runs), and 150 MB for the graph, the session and
  its thread pools (measured in runs of small models, where they are most
  of what the run adds);
- variables: the model's parameters a copy (a copy a tower under
  `replicated`, `independent` and `distributed_replicated`, one under
  `parameter_server`), plus the optimizer's slots a copy (momentum one,
  rmsprop and adam two), plus 3 parameter-sized transients of their
  initialisation (a truncated normal draw, its scale and its shift, made
  for every variable at once);
- gradients: 2 parameter-sized tensors a tower (the loss's gradient and,
  while they are summed, the weight decay's);
- activations: the forward tensors of one image, times the batch a tower,
  times the towers, times 0.4: the part the backward pass keeps (TensorFlow
  frees at once a tensor only the forward pass reads, such as batch norm's
  intermediate sums; 0.3 to 0.4 measured in resnet20, resnet50 and vgg16);
- the input pipeline: with files or digits, 4 batches of images a tower
  in flight (decoded, preprocessed, prefetched); with synthetic data one.

The parameters and the forward tensors of one image come from one build of
the model into a scratch graph at a batch of 17 (a size no kernel or dense
layer of these models has as its first dimension: a float tensor whose
first dimension is 17 is counted as per-image), in the tower's dtype,
thrown away after.

Measured against the peak resident bytes above TensorFlow's own (runs of
2 steps on CPU towers, TensorFlow 2.21), the ratio of measured to
estimated: resnet20 on cifar10, 4 towers of 64 images, 0.97; resnet50, 4
parameter_server towers of 8, 0.71; resnet50, 2 replicated towers of 4,
1.0; vgg16, 4 towers of 4, 0.78 (the factors above were fitted to these;
with the 150 MB the small runs need, 0.73 to 0.92);
the tests hold another run within a factor of 2 either way. ResNet-50 on 8
towers of 256 images (tf_cnn_benchmarks' 8-GPU line on CPU towers) comes
to about 200 GB, where a run was killed by the kernel at 22 GB.
A run is refused when
the estimate above what this process holds now exceeds the memory
available: `MemAvailable` of /proc/meminfo, or the room left under the
process's cgroup limit when that is less.
"""

import collections
import os

from variable_mgr import errors

# The batch of the scratch build: no kernel or dense layer's first
# dimension in these models.
_PROBE_BATCH = 17
_GB = 1e9
# The graph, the session and its thread pools (measured).
_SESSION_BYTES = 150 * 10**6
# Optimizer slots a variable.
_SLOTS = {'sgd': 0, 'momentum': 1, 'rmsprop': 2, 'adam': 2}
# Strategies with a copy of the variables a tower.
_COPY_A_TOWER = ('replicated', 'independent', 'distributed_replicated')
# Parameter-sized transients of initialisation; gradient tensors a tower.
_INIT_TRANSIENTS = 3
_GRADIENT_TENSORS = 2
# The part of the forward tensors the backward pass keeps (measured).
_KEPT_FOR_BACKWARD = 0.4

Footprint = collections.namedtuple('Footprint', [
    'param_bytes', 'activation_bytes_per_image', 'image_bytes'])

Estimate = collections.namedtuple('Estimate', [
    'runtime', 'variables', 'gradients', 'activations', 'input', 'total',
    'footprint', 'towers', 'batch_size'])


class OutOfMemoryError(errors.VariableMgrError):
  """The run's estimated memory exceeds what the machine has available."""


_FOOTPRINTS = {}


def footprint(model_name, data_name, use_fp16=False):
  """The Footprint of a model (one scratch build, remembered)."""
  key = (model_name, data_name, bool(use_fp16))
  if key not in _FOOTPRINTS:
    _FOOTPRINTS[key] = _measure_footprint(model_name, data_name, use_fp16)
  return _FOOTPRINTS[key]


def _measure_footprint(model_name, data_name, use_fp16):
  from variable_mgr.benchmark.models import catalog  # pylint: disable=g-import-not-at-top
  from variable_mgr.compat import tf  # pylint: disable=g-import-not-at-top
  model = catalog.get_model(model_name, data_name)
  dtype = tf.float16 if use_fp16 else tf.float32
  with tf.Graph().as_default() as graph:
    images = tf.placeholder(dtype, [_PROBE_BATCH] + list(model.image_shape))
    labels = tf.placeholder(tf.int32, [_PROBE_BATCH])
    model.build(images, labels, is_training=True)
    params = sum(v.shape.num_elements() * 4
                 for v in tf.trainable_variables())
    per_image = 0
    for op in graph.get_operations():
      for out in op.outputs:
        shape = out.shape
        if (out.dtype.is_floating and shape.is_fully_defined() and
            shape.ndims and shape[0] == _PROBE_BATCH):
          per_image += shape.num_elements() * out.dtype.size
  image = 1
  for d in model.image_shape:
    image *= d
  return Footprint(params, per_image // _PROBE_BATCH, image * 4)


def estimate(config, towers, runtime_bytes):
  """The Estimate of a resolved BenchmarkConfig on `towers` towers."""
  fp = footprint(config.model, config.data_name, config.use_fp16)
  copies = towers if config.variable_update in _COPY_A_TOWER else 1
  slots = _SLOTS.get(config.optimizer, 2)
  variables = fp.param_bytes * (copies * (1 + slots) + _INIT_TRANSIENTS)
  gradients = fp.param_bytes * _GRADIENT_TENSORS * towers
  activations = int(fp.activation_bytes_per_image * _KEPT_FOR_BACKWARD *
                    config.batch_size * towers)
  batches_in_flight = 1 if config.synthetic else 4
  data = fp.image_bytes * config.batch_size * towers * batches_in_flight
  total = (runtime_bytes + _SESSION_BYTES + variables + gradients +
           activations + data)
  return Estimate(runtime_bytes + _SESSION_BYTES, variables, gradients,
                  activations, data, total, fp, towers, config.batch_size)


def resident_bytes():
  """This process's resident bytes now (VmRSS), or 0 where unknown."""
  try:
    with open('/proc/self/status') as f:
      for line in f:
        if line.startswith('VmRSS:'):
          return int(line.split()[1]) * 1024
  except (IOError, OSError):
    pass
  return 0


def available_bytes(meminfo='/proc/meminfo', cgroup_root='/sys/fs/cgroup'):
  """(bytes, where from): what this process can still take, the least of
  MemAvailable and the room under its cgroup's limit (v2 `memory.max`
  less `memory.current`, v1 `memory.limit_in_bytes` less
  `memory.usage_in_bytes`); (None, None) where neither can be read."""
  found = []
  try:
    with open(meminfo) as f:
      for line in f:
        if line.startswith('MemAvailable:'):
          found.append((int(line.split()[1]) * 1024,
                        'MemAvailable in %s' % meminfo))
  except (IOError, OSError):
    pass
  for limit_name, usage_name in (('memory.max', 'memory.current'),
                                 ('memory/memory.limit_in_bytes',
                                  'memory/memory.usage_in_bytes')):
    limit = _read_int(os.path.join(cgroup_root, limit_name))
    usage = _read_int(os.path.join(cgroup_root, usage_name))
    # v1 writes a huge number for no limit.
    if limit is not None and usage is not None and limit < 1 << 60:
      found.append((max(0, limit - usage), 'the room under the cgroup '
                    'limit %s' % os.path.join(cgroup_root, limit_name)))
  if not found:
    return None, None
  return min(found)


def _read_int(path):
  try:
    with open(path) as f:
      text = f.read().strip()
  except (IOError, OSError):
    return None
  return int(text) if text.isdigit() else None


def _gb(n):
  return '%.1f GB' % (n / _GB)


def describe(est):
  """The estimate's parts, in words."""
  return ('TensorFlow, the graph and the session %s; variables, their optimizer slots and their '
          'initialisation %s; gradients %s; activations %d tower%s x %d '
          'images x %.0f MB kept for the backward pass = %s; input %s' % (
              _gb(est.runtime), _gb(est.variables), _gb(est.gradients),
              est.towers, '' if est.towers == 1 else 's', est.batch_size,
              est.footprint.activation_bytes_per_image * _KEPT_FOR_BACKWARD /
              1e6,
              _gb(est.activations), _gb(est.input)))


def largest_batch(config, towers, runtime_bytes, room):
  """The largest batch a tower (at least 1) whose estimate above
  `runtime_bytes` fits in `room`, or 0 when none does."""
  fits = 0
  low, high = 1, config.batch_size
  while low <= high:
    mid = (low + high) // 2
    est = estimate(config._replace(batch_size=mid), towers, runtime_bytes)
    if est.total - runtime_bytes <= room:
      fits, low = mid, mid + 1
    else:
      high = mid - 1
  return fits


def check(config, towers, args=None, runtime_bytes=None, available=None):
  """Refuses a run of `config` (resolved) on `towers` towers whose estimate
  does not fit in the memory available; returns the Estimate.

  Args:
    args: the parsed flags, to name them as typed (None: by name).
    runtime_bytes: what the process holds now (default: its VmRSS).
    available: (bytes, where from) (default: `available_bytes()`).

  Raises:
    OutOfMemoryError: naming the estimate, the memory available and the
      flags to change.
  """
  from variable_mgr.benchmark.flags import as_typed  # pylint: disable=g-import-not-at-top
  if runtime_bytes is None:
    runtime_bytes = resident_bytes()
  room, source = available if available is not None else available_bytes()
  est = estimate(config, towers, runtime_bytes)
  if room is None or est.total - runtime_bytes <= room:
    return est
  fits = largest_batch(config, towers, runtime_bytes, room)
  fallback = getattr(config, 'device_fallback', False)

  def typed(dest, value):
    return '%s=%s' % (as_typed.typed_name(args, dest), value)

  advice = ('pass %s or less' % typed('batch_size', fits) if fits else
            'no batch fits on %d towers: pass a smaller %s' % (
                towers, as_typed.typed_name(args, 'num_gpus')))
  raise OutOfMemoryError(
      '%s %s %s: this run needs about %s of memory (%s), and %s is '
      'available (%s)%s; %s, fewer towers (%s), or run where there is more '
      'memory' % (
          typed('model', config.model), typed('batch_size', config.batch_size),
          typed('num_gpus', towers), _gb(est.total), describe(est),
          _gb(room), source,
          ' (--device=gpu found no GPU: the %d towers are CPU towers in this '
          'memory)' % towers if fallback and towers > 1 else '',
          advice, as_typed.typed_name(args, 'num_gpus')))
