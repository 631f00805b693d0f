#!/usr/bin/env python
"""Measures the library's overhead: each strategy against its plain twin.

    python benchmarks/run_overhead_benchmarks.py           # the full run
    python benchmarks/run_overhead_benchmarks.py --quick   # a check

The full run writes `benchmarks/OVERHEAD_RESULTS.md` whole; `--quick`
writes `benchmarks/OVERHEAD_RESULTS_quick.md` (lenet and resnet50_vars at 2
towers, both variable kinds, 4 rounds of 2 steps) and `--output` any other
file, so that a check never overwrites the figures of record.

Every strategy that has a plain-TensorFlow equivalent is measured against
that equivalent written by hand, with no manager (its *twin*):

- `independent`: each tower builds the model on its own copy of the
  variables (`v<d>/`, on `/cpu:d`) and applies its own gradients there;
- `parameter_server`: one set of variables (`v/`), placed on `/cpu:0` by
  `tf.train.replica_device_setter`, every other op on its tower's device;
  each variable's gradients averaged (`add_n` times 1/k) on the variable's
  device and applied once, on `/cpu:0`;
- `replicated`: a copy a tower as in `independent`; each gradient summed
  over towers with `add_n` on `/cpu:0` (the copy all-reduce with
  `local_parameter_device=cpu`), every tower applying the sums to its copy
  on its own device.

The library's side is the package's harness
(`variable_mgr.benchmark.training.harness.build_training_graph`); a twin builds the
same model (`variable_mgr.benchmark.models.catalog`), the same synthetic batch a
tower (`harness.synthetic_inputs`, on `/cpu:0`), plain SGD at the model's
learning rate, the same global-step increment after the updates and the
same fetched mean loss, on the same virtual CPU devices
(`ConfigProto(device_count={'CPU': k})`, soft placement off). What the
twins lack is the library: its validation, its scopes and device
functions, and its ordering of each update after the reads of its own
variable (`variable_mgr.ordering`).

A twin orders its updates the way one does by hand. With resource
variables it needs nothing: every read of a variable is an ancestor of its
gradient here. With ref variables a read aliases the variable's buffer and
the backward pass reads weights that no gradient of theirs waits for (the
input gradient of a layer), so an unordered update races it and the results
drift from the library's within a step; a twin's apply therefore waits for
every gradient of the towers that read the variables it updates (its own
tower; every tower for `parameter_server`).

Before any step is timed, each pair is checked to be the same computation:
the twin takes the library's initial values, both run two steps, and every
variable and the losses must agree within float32 tolerance.

Two workloads: `lenet` (the package's LeNet-sized CNN, 8 images a tower)
and `resnet50_vars` (ResNet-50's 161 variable shapes behind a trivial
forward pass, registered by `run_benchmarks.register_resnet50_vars`), at
2, 4 and 8 towers with resource variables (goal: at most 1.05x the twin),
and at 2 and 4 towers with ref variables
(`tf.compat.v1.disable_resource_variables()` in the measuring process;
goal: at most 1.10x).
"""

import collections
import functools
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
for _path in (HERE, ROOT):
  if _path not in sys.path:
    sys.path.insert(0, _path)

# pylint: disable=g-import-not-at-top,wrong-import-position
from benchmarks.overhead.graphs import prepare
from benchmarks.overhead.graphs import set_kind
from benchmarks.overhead.plan import FULL
from benchmarks.overhead.plan import QUICK
from benchmarks.overhead.plan import STRATEGIES
from benchmarks.overhead.plan import library_label
from benchmarks.overhead.plan import twin_label
from benchmarks.overhead.text import results_text
from benchmarks.overhead.text import section_lines
import run_benchmarks  # resnet50_vars, beside this file.
from variable_mgr.benchmark.reports import markdown
from variable_mgr.benchmark.reports import measure
# pylint: enable=g-import-not-at-top,wrong-import-position


# ---------------------------------------------------------------------------
# In the worker subprocesses: TensorFlow is imported only here.


def task_overhead(workload, towers, kind, rounds, steps, warmup, shapes=None):
  """One cell: every strategy against its twin on (workload, towers, kind).

  Each strategy and its twin take turns (`measure.interleaved_rounds`,
  the pair's order alternating each round), one pair after the other; a
  ratio pairs the library's and the twin's steps of the same round.
  """
  import tensorflow  # pylint: disable=g-import-not-at-top
  tensorflow.compat.v1.disable_eager_execution()
  set_kind(kind)
  computed = None
  if workload == 'resnet50_vars':
    if shapes is None:
      shapes = computed = run_benchmarks.resnet50_variable_shapes()
    run_benchmarks.register_resnet50_vars(shapes)
  load = os.getloadavg()[0]
  built, sessions, info = prepare(workload, towers, kind)
  times = collections.OrderedDict()
  for strategy in STRATEGIES:
    pair = collections.OrderedDict(
        (label, functools.partial(sessions[label].run, built[label].fetches))
        for label in (library_label(strategy), twin_label(strategy)))
    times.update(measure.interleaved_rounds(pair, rounds, steps, warmup))
  for sess in sessions.values():
    sess.close()
  result = dict(info, step_seconds=times, load=[load, os.getloadavg()[0]],
                peak_rss=measure.peak_resident_bytes(),
                tf_version=tensorflow.__version__)
  if computed is not None:
    result['shapes'] = computed
  return result


TASKS = {'overhead': task_overhead}


# ---------------------------------------------------------------------------
# In the driver: no TensorFlow; one subprocess per cell.


def measure_cells(plan, log):
  """{(workload, towers, kind): the cell's result} for every cell of `plan`."""
  results = collections.OrderedDict()
  shapes = []  # ResNet-50's: computed by the first cell that needs them.
  log('%d cells, each strategy and its twin in turn for %d rounds of %d '
      'steps' % (len(plan['cells']), plan['rounds'], plan['steps']))
  for workload, towers, kind in plan['cells']:
    extra = ({'shapes': shapes[0]}
             if shapes and workload == 'resnet50_vars' else {})
    cell = measure.run_in_subprocess(
        __file__, log, hidden=('shapes',), task='overhead',
        workload=workload, towers=towers, kind=kind, rounds=plan['rounds'],
        steps=plan['steps'], warmup=plan['warmup'], **extra)
    if 'shapes' in cell:
      shapes.append(cell.pop('shapes'))
    results[(workload, towers, kind)] = cell
  return results


def main(argv=None):
  args, given = measure.script_args(
      __doc__.split('\n')[0],
      'lenet and resnet50_vars at 2 towers, 4 rounds of 2 steps (a check); '
      'writes OVERHEAD_RESULTS_quick.md only', argv)
  if args.worker:
    measure.worker_main(TASKS, args.worker)
    return 0
  plan = QUICK if args.quick else FULL
  output = args.output or os.path.join(
      HERE, 'OVERHEAD_RESULTS_quick.md' if args.quick
      else 'OVERHEAD_RESULTS.md')
  command = markdown.command_line('run_overhead_benchmarks.py', given)
  source = markdown.source_state(ROOT)
  start = time.time()
  log = measure.make_log(start)
  results = measure_cells(plan, log)
  elapsed = time.time() - start
  if args.json:
    with open(args.json, 'w') as f:
      json.dump({'plan': plan, 'results': [
          dict(workload=key[0], towers=key[1], kind=key[2], **cell)
          for key, cell in results.items()]}, f, indent=1)
  markdown.write(output, results_text(results, plan, source, command,
                                    elapsed))
  log('wrote %s' % output)
  if not args.quick and args.output is None:
    results_md = os.path.join(HERE, 'RESULTS.md')
    run_benchmarks.write_section(results_md, section_lines(results, command),
                                 'library overhead',
                                 'run_overhead_benchmarks.py')
    log('wrote its section of %s' % results_md)
  return 0


if __name__ == '__main__':
  sys.exit(main())
