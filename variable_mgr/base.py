"""The VariableMgr abstract base: public methods validate, hooks do the work.

A harness drives a manager in the order of tf_cnn_benchmarks (see README):

    mgr = variable_mgr.create('replicated', host)
    host.devices = mgr.get_devices()
    for d in range(num_towers):
      with mgr.create_outer_variable_scope(d), tf.name_scope('tower_%i' % d):
        with tf.device(host.devices[d]):
          loss = model()
          params = mgr.trainable_variables_on_device(d)
          grads = tf.gradients(loss, params)
          refs = mgr.trainable_variables_on_device(d, writable=True)
          device_grads.append(zip(grads, refs))
    apply_devices, state = mgr.preprocess_device_grads(device_grads)
    for i, dev in enumerate(apply_devices):
      with tf.device(dev):
        grads = mgr.get_gradients_to_apply(i, state)
        mgr.append_apply_gradients_ops(state, opt, grads, training_ops)
    ... init; restore; run mgr.get_post_init_ops(); train ...

Every variable update the manager builds runs after the ops of the step that
read that variable, and after nothing else of the step but its own gradient:
see `variable_mgr.ordering` for what a read is and why that is enough. With
ref variables (TF 1.15's default), whose reads alias the variable's buffer,
an update that is not ordered so can change a value that the backward pass is
still reading.

Beside this module: `gradient_state` (what the protocol calls hand each
other), `validation` (the checks of the configuration and the gradients),
`naming` (variable names and their canonical form), `mixed_precision` and
`accumulation` (what the training options add to a step).
"""

import abc
import collections

from variable_mgr import accumulation
from variable_mgr import errors
from variable_mgr import gradient_state as gradient_state_lib
from variable_mgr import interface
from variable_mgr import mixed_precision
from variable_mgr import naming
from variable_mgr import ordering
from variable_mgr import tower_variables
from variable_mgr import training_options
from variable_mgr import upstream_calls
from variable_mgr import validation
from variable_mgr.compat import tf

REDUCTIONS = ('mean', 'sum')

# Where the strategies and the harness have always found them.
strip_port = naming.strip_port
tower_scope_of = naming.tower_scope_of
canonical_name = naming.canonical_name
StepControl = gradient_state_lib.StepControl
GradientState = gradient_state_lib.GradientState


class VariableMgr(metaclass=upstream_calls.CallForms):
  """Decides where a harness's variables live and how gradients combine.

  Args:
    benchmark_cnn: the host object (see `variable_mgr.interface`).
    reduction: 'mean' or 'sum' over towers; None for the strategy's default
      (`default_reduction`).
    accumulation_dtype: a floating dtype (e.g. tf.float32) in which float16
      gradients are added up before being cast back, so that a sum that fits
      float16 does not overflow on the way; None adds in the gradient's dtype.

  Called with tf_cnn_benchmarks master's BenchmarkCNN first, a strategy
  class takes master's positional options instead and the manager answers
  master's call forms (see `variable_mgr.upstream_calls`).

  Raises:
    InterfaceError: the host lacks an attribute the strategy reads.
    TowerCountError: no towers, or `num_gpus` disagrees with `raw_devices`.
    DuplicateDeviceError: two towers on the same device.
    InvalidOptionError: `reduction` is not 'mean' or 'sum', or
      `accumulation_dtype` is not a floating dtype.
  """

  default_reduction = 'mean'
  required_attributes = interface.LOCAL_ATTRIBUTES

  def __init__(self, benchmark_cnn, reduction=None, accumulation_dtype=None):
    interface.check_interface(benchmark_cnn, self.required_attributes)
    self.benchmark_cnn = benchmark_cnn
    self.staging_delta_ops = []
    if reduction is None:
      reduction = self.default_reduction
    if reduction not in REDUCTIONS:
      raise errors.InvalidOptionError(
          'reduction=%r: tower gradients are combined by %s; pass one of '
          'these, or None for the strategy\'s default (%r).' %
          (reduction, ' or '.join(repr(r) for r in REDUCTIONS),
           self.default_reduction))
    self.reduction = reduction
    self.accumulation_dtype = validation.floating_dtype(accumulation_dtype)
    self.training_options = training_options.TrainingOptions()
    self._loss_scale = None
    self._internal_variables = []
    validation.check_towers(list(benchmark_cnn.raw_devices),
                            benchmark_cnn.num_gpus)
    self._check_config()

  # Whether `variable_consistency='relaxed'` applies (replicated says yes).
  supports_relaxed_consistency = False
  # Whether `_gradients_to_apply` only reads the payload, so that every
  # apply device's list can be taken at once (the tower-copy strategies).
  gradients_by_device = False
  # tf_cnn_benchmarks master's numbers where they differ from the project's
  # (`upstream_calls.attach` sets it on a manager master's harness builds):
  # the towers' variables are paired by position, whatever made them
  # (master's own takes tf.Variables, and its tests hand it some), and the
  # first step of relaxed consistency applies zero gradients (master's
  # deferred puts start with zeros) instead of nothing.
  master_numbers = False

  def configure_training(self, options):
    """Sets the training options (a `training_options.TrainingOptions`):
    float16 towers, loss scaling, accumulation, relaxed consistency.

    `variable_mgr.create` calls it; call it before building any tower.

    Raises:
      InvalidOptionError: a value outside its domain.
      IncompatibleOptionsError: a combination that cannot work: relaxed
        consistency outside replicated or with accumulation, a dynamic loss
        scale across workers that the strategy cannot check together, an
        option that needs another.
      ProtocolError: options set twice.
    """
    training_options.check_values(options)
    if options.relaxed and not self.supports_relaxed_consistency:
      raise errors.IncompatibleOptionsError(
          'variable_consistency=\'relaxed\' with %s: relaxed consistency '
          'defers the all-reduce of replicated by one step; use replicated, '
          'or parameter_server with staged_vars=True for one-step-stale '
          'variables there.' % type(self).__name__)
    workers = training_options.worker_count(self.benchmark_cnn)
    checks_workers = (type(self)._all_towers_finite is not
                      VariableMgr._all_towers_finite)
    if options.auto_loss_scale and workers > 1 and not checks_workers:
      raise errors.IncompatibleOptionsError(
          'auto_loss_scale=True with %s on %d workers: this strategy cannot '
          'tell every worker whether another worker\'s gradients hold an '
          'inf, so a skipped step would be skipped on some workers only; '
          'use a fixed loss_scale, or a cluster strategy (parameter_server, '
          'distributed_replicated, collective_all_reduce), which checks '
          'across workers.' %
          (type(self).__name__, workers))
    if self._loss_scale is not None or self.training_options.active:
      raise errors.ProtocolError(
          'configure_training called twice, or after scale_loss: set the '
          'training options once, before building the towers.')
    self.training_options = options
    if options.use_fp16:
      self.create_outer_variable_scope = mixed_precision.with_float32_storage(
          self.create_outer_variable_scope)

  def scale_loss(self, loss):
    """The loss to differentiate: `loss` times the loss scale with
    `use_fp16` (as float32), else `loss` itself. Call it in every tower."""
    if not self.training_options.use_fp16:
      return loss
    if self._loss_scale is None:
      self._loss_scale = self._new_loss_scale(self.training_options)
    return self._loss_scale.scale_loss(loss)

  def _new_loss_scale(self, options):
    """Hook: the graph's `mixed_precision.LossScale`: local variables on
    the worker's CPU, each worker's own."""
    return mixed_precision.LossScale(
        options.initial_loss_scale, options.auto_loss_scale,
        options.inc_loss_scale_every_n, self.benchmark_cnn.cpu_device)

  @property
  def loss_scale(self):
    """The loss-scale variable (float32), or None without `use_fp16` (or
    before the first `scale_loss`)."""
    return self._loss_scale.variable if self._loss_scale else None

  def _check_config(self):
    """Hook: refuse a bad configuration before any graph is built."""

  @property
  def use_mean(self):
    return self.reduction == 'mean'

  @property
  def num_towers(self):
    return len(self.benchmark_cnn.raw_devices)

  # -- Abstract hooks ---------------------------------------------------------

  @abc.abstractmethod
  def each_tower_has_variables(self):
    """True if every tower has a copy of its own of the variables."""

  @abc.abstractmethod
  def create_outer_variable_scope(self, device_num):
    """The tf.variable_scope around tower `device_num`'s model."""

  @abc.abstractmethod
  def get_devices(self):
    """One device (string or device function) a tower, for the harness."""

  @abc.abstractmethod
  def _preprocess(self, tower_grads):
    """Returns (apply_devices, payload) for validated `[tower][(g, v)]`."""

  @abc.abstractmethod
  def _gradients_to_apply(self, device_num, state):
    """The `[(grad, var)]` to apply on apply device `device_num`."""

  # -- The protocol -----------------------------------------------------------

  def supports_staged_vars(self):
    """Whether variables are read through StagingAreas."""
    return False

  def retain_tower_updates(self, device_num):
    """True for the one tower whose UPDATE_OPS (batch-norm statistics) the
    harness keeps: tower 0, whose variables are saved and evaluated."""
    return device_num == 0

  def trainable_variables_on_device(self, device_num, writable=False):
    """Tower `device_num`'s trainable variables (what to differentiate)."""
    del writable  # Reads and writes go to the same variables here.
    self._check_tower_index(device_num)
    prefix = ('v%d/' % device_num if self.each_tower_has_variables()
              else 'v/')
    return [v for v in tf.trainable_variables() if v.name.startswith(prefix)]

  def preprocess_device_grads(self, device_grads):
    """Validates the towers' gradients and starts combining them.

    Args:
      device_grads: `[tower][(grad, var)]`; any iterables (a Python 3
        `zip` per tower is fine), read once.

    Returns:
      `(apply_devices, state)`: the harness calls `get_gradients_to_apply(i,
      state)` and `append_apply_gradients_ops` under `tf.device` of each.

    Raises:
      TowerVariableError: a tower variable not created by tf.get_variable.
      GradientListError: the wrong number of towers, or towers that differ
        in length, variable order, or in which gradients are None.
      GradientShapeError: a gradient whose shape is not its variable's.
      ProtocolError: `use_fp16` and a tower's gradients not taken of
        `scale_loss(loss)`.
    """
    towers = [list(grads) for grads in device_grads]
    validation.check_pairs(towers)
    same_variable = self._same_variable
    if self.master_numbers:
      same_variable = lambda tower_var, first_var: True  # By position.
    else:
      tower_variables.check_tower_variables(towers)
    validation.check_gradients(towers, self.num_towers, same_variable)
    # Found before the strategy adds ops of its own: only the towers' ops
    # (and staged puts) read the variables yet.
    variables = self._updated_variables(towers)
    waits = ordering.find_readers(variables)
    for name, ops in self._update_dependencies(variables).items():
      waits[name].extend(ops)
    control = None
    if self.training_options.active:
      towers, control = self._control_step(towers, waits)
    apply_devices, payload = self._preprocess(towers)
    state = GradientState(apply_devices, towers, payload, waits)
    state.step_control = control
    return apply_devices, state

  def _control_step(self, towers, waits):
    """The gradients to hand the strategy under the training options, and
    the step's `StepControl` (see `variable_mgr.accumulation`); `waits` as
    `GradientState.waits`."""
    options = self.training_options
    devices = list(self.benchmark_cnn.raw_devices)
    cpu = self.benchmark_cnn.cpu_device
    ops = []
    counted = None  # Whether this step hands gradients over; None: always.
    before = set(id(v) for v in tf.local_variables())
    with tf.name_scope('training_options'):
      if options.use_fp16:
        mixed_precision.check_scaled(self._loss_scale, towers)
        towers = [[(self._loss_scale.unscale(g), v) for g, v in tower]
                  for tower in towers]
      if options.backward_passes_per_step > 1:
        counted, counter_update = accumulation.cycle_counter(
            options.backward_passes_per_step, cpu)
        towers, updates = accumulation.accumulate(
            towers, devices, options.backward_passes_per_step, counted,
            self.use_mean)
        ops.append(counter_update)
        ops.extend(updates)
      if options.relaxed:
        towers, has_previous, updates = accumulation.defer(towers, devices)
        if not self.master_numbers:
          counted = has_previous
        ops.extend(updates)
      go = counted
      if options.use_fp16 and options.auto_loss_scale:
        flags = [mixed_precision.tower_all_finite([g for g, _ in tower])
                 for tower in towers]
        with tf.device(cpu):
          finite = self._all_towers_finite(flags, waits)
          ops.extend(self._loss_scale.update_ops(finite, counted))
          go = finite if go is None else tf.logical_and(go, finite)
      if go is not None:
        towers = accumulation.gate(towers, go)
        ops.extend(self._gated_step_ops(go))
    self._internal_variables = [v for v in tf.local_variables()
                                if id(v) not in before]
    return towers, StepControl(go, ops, cpu)

  @property
  def step_state_variables(self):
    """The local variables the training options keep (accumulators,
    deferred gradients, counters), made by `preprocess_device_grads`."""
    return list(self._internal_variables)

  def _gated_step_ops(self, go):
    """Hook: ops that run every step of a gated step (see
    `_control_step`), beside the state's assigns."""
    del go
    return []

  @property
  def workers_meet_after_reads(self):
    """Whether every update of a step already waits for every worker's
    reads of the shared variables for that step (a dynamic loss scale's
    exchange on a synchronous PS cluster, see
    `strategies.shared_loss_scale`); when False, a harness of several
    workers on shared variables keeps its own barrier before the
    updates."""
    return False

  def _all_towers_finite(self, tower_flags, waits):
    """Hook: a bool scalar, every tower's flag (of every worker) is true;
    on the worker's CPU. A strategy of several workers overrides it;
    `waits` (as `GradientState.waits`) are the step's reads of the
    variables, for a strategy whose decision must follow them."""
    del waits
    return tf.reduce_all(tf.stack(tower_flags))

  def get_gradients_to_apply(self, device_num, gradient_state):
    """The `[(grad, var)]` to apply on `apply_devices[device_num]`."""
    if not 0 <= device_num < len(gradient_state.apply_devices):
      raise errors.ProtocolError(
          'device_num=%r: preprocess_device_grads returned %d apply devices; '
          'pass an index below that.' %
          (device_num, len(gradient_state.apply_devices)))
    return self._gradients_to_apply(device_num, gradient_state)

  def append_apply_gradients_ops(self, gradient_state, opt, grads,
                                 training_ops):
    """Appends to `training_ops` the ops that apply `grads` with `opt`.

    The update of each variable runs after the step's reads of it (see
    `variable_mgr.ordering`), each gradient being passed through an identity
    that waits for those reads where they are not already its ancestors.
    """
    grads = [(gradient_state.after_reads(g, v), v) for g, v in grads
             if g is not None]
    control = gradient_state.step_control
    if control is None:
      self._append_apply(gradient_state, opt, grads, training_ops)
      return
    ops = []
    if control.go is None:
      self._append_apply(gradient_state, opt, grads, ops)
    else:
      # Every op of the strategy's apply step is dead on the steps that
      # apply nothing, not only those that consume a gradient: an op that
      # waits for other workers (distributed_replicated's barrier dequeues
      # tokens that the other workers' dead updates never enqueue) would
      # otherwise block such a step for ever.
      with tf.control_dependencies([accumulation.gate_token(
          control.go, control.device)]):
        self._append_apply(gradient_state, opt, grads, ops)
      if ops:
        ops = [accumulation.alive_after(ops, control.go, control.device)]
    if not control.ops_appended:
      control.ops_appended = True
      ops.extend(control.ops)
    training_ops.extend(ops)

  def _append_apply(self, gradient_state, opt, grads, training_ops):
    """Hook: the update ops of `grads`, already ordered after their
    variables' reads."""
    del gradient_state
    if grads:
      training_ops.append(opt.apply_gradients(grads))

  def _updated_variables(self, tower_grads):
    """Hook: the variables whose readers updates must wait for, once each:
    the towers' variables that have a gradient."""
    seen = collections.OrderedDict()
    for tower in tower_grads:
      for g, v in tower:
        if g is not None:
          seen.setdefault(v.op.name, v)
    return list(seen.values())

  def _update_dependencies(self, variables):
    """Hook: `{variable op name: [ops]}`, ops besides the readers that the
    updates of `variables` (those of `_updated_variables`) must follow."""
    del variables
    return {}

  def get_post_init_ops(self):
    """Ops to run once after variables are initialised or restored."""
    return []

  def get_variables_to_save(self):
    """`{canonical_name: variable}` for a Saver: one copy of each variable,
    named without tower or PS prefixes, so that a checkpoint written under
    one strategy restores under any other."""
    result = {}
    if self._loss_scale is not None:
      result.update(self._loss_scale.variables)
    internal = set(id(v) for v in self._internal_variables)
    for var in self._savable_candidates():
      if id(var) in internal:
        continue
      name = self._canonical_name(strip_port(var.op.name))
      if name is not None:
        result.setdefault(name, var)
    return result

  def _savable_candidates(self):
    """Hook: variables that may be saved, preferred ones first."""
    return tf.global_variables()

  def _canonical_name(self, name):
    """Hook: the saved name of `name`, or None to leave it out (the copies of
    towers other than 0)."""
    scope, index = tower_scope_of(name)
    if scope is not None and index not in (None, 0):
      return None
    return canonical_name(name)

  # -- Validation -------------------------------------------------------------

  def _check_tower_index(self, device_num):
    validation.check_tower_index(device_num, self.num_towers)

  def _same_variable(self, tower_var, first_var):
    """Whether two towers' entries name the same model variable."""
    if self.each_tower_has_variables():
      return (canonical_name(tower_var.op.name) ==
              canonical_name(first_var.op.name))
    return tower_var is first_var
