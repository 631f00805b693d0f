"""Which task of which cluster this process is: flags or `TF_CONFIG`.

Two spellings, the two conventions of this ecosystem:

* tf_cnn_benchmarks' flags: `--job_name=worker --task_index=1
  --ps_hosts=h0:2222 --worker_hosts=h1:2222,h2:2222`;
* the `TF_CONFIG` environment variable of Kubeflow's TFJob and
  tf.distribute: `{"cluster": {"ps": ["h0:2222"], "worker": ["h1:2222",
  "h2:2222"]}, "task": {"type": "worker", "index": 1}}`. A `chief` job (one
  task) becomes worker 0 and the `worker` tasks follow it.

The flags or `TF_CONFIG`, never both: a `TF_CONFIG` set together with
`--job_name`, `--ps_hosts` or `--worker_hosts` is refused rather than
silently overridden. Every refusal is one `ClusterConfigError` subclass whose message names the value,
the rule it breaks and the fix.
"""

import collections
import json
import os

from variable_mgr import errors

# The flags that say which task this process is.
TASK_FLAGS = ('job_name', 'task_index', 'ps_hosts', 'worker_hosts')
JOB_NAMES = ('ps', 'worker')
# TF_CONFIG job types: 'chief' is folded into 'worker' as its task 0.
TF_CONFIG_JOBS = ('chief', 'ps', 'worker')


class ClusterConfigError(errors.VariableMgrError):
  """Base class: the cluster description or this task's place in it is bad."""


class MalformedTfConfigError(ClusterConfigError):
  """TF_CONFIG is not JSON, or not an object of the documented shape."""


class MissingTaskError(ClusterConfigError):
  """No job name / task, or a job the cluster does not have."""


class TaskIndexError(ClusterConfigError):
  """The task index is not an index of its job's host list."""


class HostAddressError(ClusterConfigError):
  """A host is not 'host:port' with a port in 1..65535."""


class TaskSpec(collections.namedtuple(
    'TaskSpec', ['job_name', 'task_index', 'ps_hosts', 'worker_hosts'])):
  """One task of a ps/worker cluster.

  Attributes:
    job_name: 'ps' or 'worker'.
    task_index: index in the job's host list.
    ps_hosts: list of 'host:port', at least one.
    worker_hosts: list of 'host:port', at least one; worker 0 is the chief.
  """

  __slots__ = ()

  @property
  def name(self):
    """'worker:1': how logs and errors name a task."""
    return task_name(self.job_name, self.task_index)

  @property
  def is_chief(self):
    return self.job_name == 'worker' and self.task_index == 0

  @property
  def address(self):
    return self.hosts(self.job_name)[self.task_index]

  @property
  def num_workers(self):
    return len(self.worker_hosts)

  def hosts(self, job_name):
    return self.ps_hosts if job_name == 'ps' else self.worker_hosts

  def cluster_dict(self):
    return {'ps': list(self.ps_hosts), 'worker': list(self.worker_hosts)}

  def all_tasks(self):
    """[(job_name, index, address)] of every task, PS first."""
    return [(job, i, address) for job in JOB_NAMES
            for i, address in enumerate(self.hosts(job))]


def task_name(job_name, task_index):
  return '%s:%d' % (job_name, task_index)


def split_address(address):
  """'127.0.0.1:2222' -> ('127.0.0.1', 2222).

  Raises:
    HostAddressError: no port, or a port that is not 1..65535.
  """
  host, sep, port = str(address).rpartition(':')
  if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
    raise HostAddressError(
        'host %r: every cluster address must be host:port with a port in '
        '1..65535; write it as e.g. %r.' %
        (address, (host if sep else str(address)) + ':2222'))
  return host, int(port)


def _check_hosts(source, job_name, hosts):
  if not hosts:
    raise MissingTaskError(
        '%s: the cluster has no %s task; a cluster needs at least one ps and '
        'one worker, e.g. %s.' % (source, job_name, _EXAMPLE_FLAGS))
  for address in hosts:
    split_address(address)
  duplicates = sorted(set(h for h in hosts if hosts.count(h) > 1))
  if duplicates:
    raise HostAddressError(
        '%s: %s appears twice in the %s hosts; every task needs an address '
        'of its own.' % (source, duplicates[0], job_name))


def _check_index(source, job_name, task_index, hosts, example):
  if isinstance(task_index, bool) or not isinstance(task_index, int):
    raise TaskIndexError(
        '%s: task index %r is not an integer; write it as a whole number '
        'of 0..%d, e.g. %s.' % (source, task_index, len(hosts) - 1, example))
  if not 0 <= task_index < len(hosts):
    raise TaskIndexError(
        '%s: task index %r is out of range: the %s job has %d task(s), so '
        'the index must be 0..%d; fix the index or add hosts.' %
        (source, task_index, job_name, len(hosts), len(hosts) - 1))


_EXAMPLE_FLAGS = ('--job_name=worker --task_index=0 '
                  '--ps_hosts=127.0.0.1:2222 --worker_hosts=127.0.0.1:2223')


def _host_list(text):
  if isinstance(text, (list, tuple)):
    return [str(h).strip() for h in text if str(h).strip()]
  return [h.strip() for h in (text or '').split(',') if h.strip()]


def from_flags(job_name, task_index, ps_hosts, worker_hosts):
  """The TaskSpec of tf_cnn_benchmarks-style flags.

  Args:
    job_name: 'ps' or 'worker'.
    task_index: an int (or its decimal string).
    ps_hosts, worker_hosts: comma-separated 'host:port' lists (or lists).

  Raises:
    MissingTaskError: a job name other than ps/worker, or an empty job.
    TaskIndexError: the index is not in the job's host list.
    HostAddressError: a host without a valid port, or a duplicate.
  """
  source = '--job_name=%s' % job_name
  if job_name not in JOB_NAMES:
    raise MissingTaskError(
        '--job_name=%r: a task is either ps or worker; pass --job_name=ps or '
        '--job_name=worker with --task_index.' % (job_name,))
  ps_hosts, worker_hosts = _host_list(ps_hosts), _host_list(worker_hosts)
  _check_hosts('--ps_hosts=%s' % ','.join(ps_hosts), 'ps', ps_hosts)
  _check_hosts('--worker_hosts=%s' % ','.join(worker_hosts), 'worker',
               worker_hosts)
  if isinstance(task_index, str) and task_index.strip().isdigit():
    task_index = int(task_index)
  hosts = ps_hosts if job_name == 'ps' else worker_hosts
  _check_index('%s --task_index=%s' % (source, task_index), job_name,
               task_index, hosts, '--task_index=0')
  return TaskSpec(job_name, task_index, ps_hosts, worker_hosts)


def from_tf_config(text):
  """The TaskSpec of a `TF_CONFIG` JSON string.

  Raises:
    MalformedTfConfigError: not JSON, or not `{"cluster": {...}, "task":
      {...}}` with lists of strings.
    MissingTaskError: no "task", a task type the cluster lacks, no ps or no
      worker job, or more than one chief.
    TaskIndexError: the task index is not in its job's host list.
    HostAddressError: a host without a valid port, or a duplicate.
  """
  example = ('{"cluster": {"ps": ["127.0.0.1:2222"], "worker": '
             '["127.0.0.1:2223"]}, "task": {"type": "worker", "index": 0}}')
  try:
    config = json.loads(text)
  except ValueError as e:
    raise MalformedTfConfigError(
        'TF_CONFIG=%r is not valid JSON (%s); set it to an object such as '
        '%s.' % (_shorten(text), e, example))
  if not isinstance(config, dict) or not isinstance(
      config.get('cluster'), dict):
    raise MalformedTfConfigError(
        'TF_CONFIG=%r: needs a "cluster" object mapping job names to '
        'host:port lists, e.g. %s.' % (_shorten(text), example))
  cluster = config['cluster']
  for job, hosts in sorted(cluster.items()):
    if job not in TF_CONFIG_JOBS:
      raise MalformedTfConfigError(
          'TF_CONFIG cluster job %r: this benchmark runs jobs %s only; '
          'remove it.' % (job, ', '.join(TF_CONFIG_JOBS)))
    if not isinstance(hosts, list) or not all(
        isinstance(h, str) for h in hosts):
      raise MalformedTfConfigError(
          'TF_CONFIG cluster job %r: %r is not a list of "host:port" '
          'strings; write e.g. ["127.0.0.1:2222"].' % (job, hosts))
  task = config.get('task')
  if not isinstance(task, dict) or 'type' not in task:
    raise MissingTaskError(
        'TF_CONFIG=%r has no "task": say which task this process is, e.g. '
        '"task": {"type": "worker", "index": 0}.' % _shorten(text))
  task_type = task['type']
  index = task.get('index', 0)
  if task_type not in cluster:
    raise MissingTaskError(
        'TF_CONFIG task type %r: the cluster has no such job (it has %s); '
        'use one of them.' % (task_type, ', '.join(sorted(cluster)) or
                              'none'))
  chief = cluster.get('chief', [])
  if len(chief) > 1:
    raise MissingTaskError(
        'TF_CONFIG cluster "chief" has %d tasks: a cluster has at most one '
        'chief; list the others under "worker".' % len(chief))
  _check_index('TF_CONFIG task %s' % json.dumps(task), task_type, index,
               cluster[task_type], '"index": 0')
  ps_hosts = list(cluster.get('ps', []))
  worker_hosts = list(chief) + list(cluster.get('worker', []))
  _check_hosts('TF_CONFIG cluster "ps"', 'ps', ps_hosts)
  _check_hosts('TF_CONFIG cluster "chief"/"worker"', 'worker', worker_hosts)
  if task_type == 'ps':
    return TaskSpec('ps', index, ps_hosts, worker_hosts)
  if task_type == 'worker':
    index += len(chief)
  return TaskSpec('worker', index, ps_hosts, worker_hosts)


def _shorten(text, limit=120):
  text = str(text)
  return text if len(text) <= limit else text[:limit] + '...'


def resolve(job_name=None, task_index=None, ps_hosts=None, worker_hosts=None,
            environ=None):
  """This process's TaskSpec, or None for a single-process run.

  The flags when `job_name` is given; otherwise `TF_CONFIG` in `environ`
  (default `os.environ`) when set and not empty.

  Raises:
    ClusterConfigError: see `from_flags` and `from_tf_config`; also when
      --task_index or host lists are given without --job_name, and when
      TF_CONFIG is set and the flags name a task too.
  """
  environ = os.environ if environ is None else environ
  given = [flag for flag, value in (('--job_name', job_name),
                                    ('--ps_hosts', ps_hosts),
                                    ('--worker_hosts', worker_hosts))
           if value]
  if given and environ.get('TF_CONFIG', '').strip():
    raise MissingTaskError(
        'TF_CONFIG is set and %s given too: a task is described by the '
        'flags or by TF_CONFIG, not both; unset TF_CONFIG or drop %s.' %
        (', '.join(given), ', '.join(given)))
  if job_name:
    return from_flags(job_name, 0 if task_index is None else task_index,
                      ps_hosts, worker_hosts)
  if ps_hosts or worker_hosts:
    raise MissingTaskError(
        '--ps_hosts/--worker_hosts without --job_name: say which task this '
        'process is, e.g. %s.' % _EXAMPLE_FLAGS)
  text = environ.get('TF_CONFIG', '')
  if text.strip():
    return from_tf_config(text)
  return None


def requested(job_name=None, ps_hosts=None, worker_hosts=None, environ=None):
  """Whether the flags or `TF_CONFIG` (in `environ`, default `os.environ`)
  name a cluster task, rightly or not: then `resolve` says which, or why
  not."""
  environ = os.environ if environ is None else environ
  return bool(job_name or ps_hosts or worker_hosts or
              environ.get('TF_CONFIG', '').strip())
