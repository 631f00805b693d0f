"""Edges the machine-made mutants found unchecked (docs/tests.md): the
evaluation's strategy line, the memory estimate's optimizer slots, the
controller's refusal of a task without a job, and the launcher's summary
of a controller's cluster. Each against its closed form or exact text."""

import io

import pytest

from variable_mgr.benchmark.cluster import controller_task
from variable_mgr.benchmark.cluster import launcher
from variable_mgr.benchmark.cluster import task_spec
from variable_mgr.benchmark.flags import command_line
from variable_mgr.benchmark.training import evaluation
from variable_mgr.benchmark.training import memory_estimate
from variable_mgr.benchmark.training import run_config

STRATEGIES = ['independent', 'parameter_server', 'replicated',
              'distributed_replicated', 'collective_all_reduce']


@pytest.mark.parametrize('update', STRATEGIES)
def test_evaluation_says_which_strategy_it_puts_in_place(update):
  lines = []
  config = run_config.BenchmarkConfig(model='trivial',
                                      variable_update=update)
  evaluated = evaluation.eval_config(config, log=lines.append)
  if update in ('distributed_replicated', 'collective_all_reduce'):
    assert evaluated.variable_update == 'replicated'
    assert lines == [
        'Evaluating with --variable_update=replicated in place of %s '
        '(checkpoints restore under any strategy)' % update]
  else:
    assert evaluated.variable_update == update
    assert lines == []


@pytest.mark.parametrize('update,copies', [('parameter_server', 1),
                                           ('replicated', 4)])
def test_the_estimate_counts_each_optimizer_slot_a_copy(update, copies):
  """An optimizer's slots (momentum 1, rmsprop and adam 2) are each the
  size of the variables, on every copy: the estimate's variables differ
  from plain SGD's by slots x copies x the parameters' bytes."""
  def variables(optimizer):
    config = run_config.BenchmarkConfig(
        model='trivial', variable_update=update, optimizer=optimizer,
        num_gpus=4, device='cpu').resolved()
    est = memory_estimate.estimate(config, 4, 0)
    return est.variables, est.footprint.param_bytes

  sgd, params = variables('sgd')
  assert params > 0
  for optimizer, slots in (('momentum', 1), ('rmsprop', 2), ('adam', 2)):
    assert variables(optimizer)[0] - sgd == slots * copies * params


def _controller_args(extra):
  return command_line.parse_task_args(
      ['--variable_update=distributed_all_reduce', '--all_reduce_spec=xring',
       '--worker_hosts=127.0.0.1:2223,127.0.0.1:2224'] + extra, environ={})


def test_a_controller_task_without_a_job_is_asked_for_one():
  # No TF_CONFIG: the flags lack the job, not TF_CONFIG a controller.
  with pytest.raises(task_spec.MissingTaskError) as info:
    controller_task.resolve(_controller_args([]), environ={})
  assert str(info.value).startswith('--job_name=None with --variable_update='
                                    'distributed_all_reduce: its tasks are '
                                    'one controller and the workers')
  with pytest.raises(task_spec.MissingTaskError,
                     match='TF_CONFIG has no controller task'):
    controller_task.resolve(_controller_args([]), environ={
        'TF_CONFIG': '{"cluster": {"worker": ["127.0.0.1:2223"]}}'})
  spec = controller_task.resolve(_controller_args(
      ['--job_name=controller', '--controller_host=127.0.0.1:2222']),
                                 environ={})
  assert spec.name == controller_task.CONTROLLER
  workers = [('worker:0', '127.0.0.1:2223'), ('worker:1', '127.0.0.1:2224')]
  assert spec.workers() == workers
  assert spec.others() == workers  # The controller itself left out.
  worker = controller_task.resolve(_controller_args(
      ['--job_name=worker', '--task_index=1',
       '--controller_host=127.0.0.1:2222']), environ={})
  assert worker.others() == [(controller_task.CONTROLLER, '127.0.0.1:2222'),
                             workers[0]]


class _Cluster(object):
  """What launcher's summary reads of a finished cluster."""

  def __init__(self, rates, controller_host=None):
    self.ps_hosts = [] if controller_host else ['127.0.0.1:1']
    self.worker_hosts = ['127.0.0.1:%d' % (2 + k) for k in range(len(rates))]
    self.controller_host = controller_host
    self._rates = rates

  def worker_results(self):
    return [{'images_per_sec': r} for r in self._rates]


@pytest.mark.parametrize('controller', [None, '127.0.0.1:9'])
def test_the_launcher_s_summary_line(controller):
  out = io.StringIO()
  args = command_line.parse_args(['--model', 'trivial'], environ={})
  assert args.output is None
  launcher._report(_Cluster([10.5, 20.25], controller), args, out)  # pylint: disable=protected-access
  lines = out.getvalue().splitlines()
  if controller:
    want = ('cluster total images/sec: 30.75 (the controller\'s one graph '
            'over 2 workers)')
  else:
    want = 'cluster total images/sec: 30.75 (2 workers: 10.50, 20.25)'
  assert lines[:3] == ['-' * 64, want, '-' * 64]


def test_the_controller_waits_for_every_worker_s_port(monkeypatch):
  spec = controller_task.resolve(_controller_args(
      ['--job_name=controller', '--controller_host=127.0.0.1:2222']),
                                 environ={})
  up = {'127.0.0.1:2223': True, '127.0.0.1:2224': True}
  monkeypatch.setattr(controller_task.liveness, 'connect', lambda address, *a: (
      controller_task.liveness.CONNECTED if up[address] else 'refused'))
  lines = []
  controller_task._wait_for_workers(spec, 0.0, lines.append)  # pylint: disable=protected-access
  assert lines == []
  up['127.0.0.1:2224'] = False
  with pytest.raises(controller_task.liveness.TaskFailedError) as info:
    controller_task._wait_for_workers(spec, 0.0, lines.append)  # pylint: disable=protected-access
  assert str(info.value) == (
      'task controller: worker:1 at 127.0.0.1:2224 did not come up within '
      '--startup_timeout_secs=0; start them or raise the timeout.')


def test_the_controller_s_dead_are_tasks_seen_before_that_now_refuse(
    monkeypatch):
  states = {'a:1': controller_task.liveness.CONNECTED,
            'b:1': controller_task.liveness.REFUSED,
            'c:1': controller_task.liveness.REFUSED}
  monkeypatch.setattr(controller_task.liveness, 'connect',
                      lambda address, *a: states[address])
  seen = {'worker:1'}
  tasks = [('worker:0', 'a:1'), ('worker:1', 'b:1'), ('worker:2', 'c:1')]
  dead = controller_task._gone(tasks, seen)  # pylint: disable=protected-access
  # worker:2 never came up: not dead, not seen; worker:0 answers: seen.
  assert dead == [('worker:1', 'b:1')]
  assert seen == {'worker:0', 'worker:1'}
