"""Hosts on one machine: a network namespace a task, links of a set speed.

`Network(num_hosts, rate)` makes, for one run:

* a switch namespace `<prefix><pid>-sw` holding a bridge `br0`;
* a host namespace `<prefix><pid>-<i>` a task, with `lo` and `eth0` at
  10.77.0.<i+1>/24, its veth peer `h<i>` on the bridge;
* on both ends of every veth a `tbf` qdisc of `rate` bits/s, so that each
  link is shaped in both directions (the host's `eth0` shapes what it
  sends, the bridge side `h<i>` what it receives).

Nothing of it lives in the machine's own namespace: the hosts have no route
out, the machine's other users and interfaces cannot reach them, and every
run (even two at once) can use the same addresses. `remove()` kills what
still runs inside the namespaces and deletes them; `create()` first deletes
the namespaces of runs of the same prefix whose process is gone (a run
killed by SIGKILL cannot clean up after itself).

It needs Linux, root (namespaces, veth pairs and qdiscs are privileged)
and iproute2's `ip` and `tc`: `check_supported()` says which is missing and
what to do, before anything is made.

A way to see on one machine how a strategy behaves on a network of a given
speed: the links are real TCP/IP paths through the kernel with a bandwidth
limit and their own queues, not a model of one; there is no latency or
loss (the kernel here has no `netem`), and every host shares the machine's
CPUs.
"""

import os
import re
import shutil
import signal
import subprocess
import sys
import time

from variable_mgr import errors

PREFIX = 'vmgr'
SUBNET = '10.77.0.'
NETMASK = 24
BRIDGE = 'br0'
HOST_DEVICE = 'eth0'
# The port of every task: each task has an address of its own.
PORT = 2222
# tbf: a queue of at most this long at the link's rate, and a burst of at
# least this many bytes (tbf splits larger GSO segments of a veth itself)
# or 10 ms at the rate, whichever is more.
LATENCY = '500ms'
MIN_BURST_BYTES = 16 * 1024
BURST_SECS = 0.01
COMMAND_TIMEOUT_SECS = 30.0
_NAME = re.compile(r'^(?P<prefix>[a-z]+)(?P<pid>\d+)-(?P<what>\S+)$')


class NetworkUnavailableError(errors.VariableMgrError):
  """This machine cannot make namespaces: not Linux, not root, no iproute2."""


class NetworkSetupError(RuntimeError):
  """A command that builds or changes the network failed."""


def check_supported(flag='--network_rate'):
  """Raises NetworkUnavailableError naming what is missing and the fix."""
  if not sys.platform.startswith('linux'):
    raise NetworkUnavailableError(
        '%s runs every task in a Linux network namespace; this machine is '
        '%r: drop %s to run the cluster over 127.0.0.1.' % (
            flag, sys.platform, flag))
  if os.geteuid() != 0:
    raise NetworkUnavailableError(
        '%s needs root (network namespaces, veth pairs and tc qdiscs are '
        'privileged) and this process runs as uid %d: run it as root with '
        'this Python (sudo "%s" -m ...: in a venv, sudo python runs '
        'another Python), or drop %s to run the cluster over 127.0.0.1.' % (
            flag, os.geteuid(), sys.executable, flag))
  missing = [tool for tool in ('ip', 'tc') if shutil.which(tool) is None]
  if missing:
    raise NetworkUnavailableError(
        '%s needs iproute2\'s %s, not found on PATH: install iproute2 (e.g. '
        'apt-get install iproute2), or drop %s.' % (
            flag, ' and '.join(missing), flag))


def run(command, check=True):
  """Runs `command` (a list); returns its stdout. Raises NetworkSetupError
  with the command and its stderr when it fails and `check`."""
  try:
    done = subprocess.run(command, stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True,
                          timeout=COMMAND_TIMEOUT_SECS)
  except (OSError, subprocess.TimeoutExpired) as e:
    if check:
      raise NetworkSetupError('`%s` failed: %s' % (' '.join(command), e))
    return ''
  if check and done.returncode != 0:
    raise NetworkSetupError('`%s` failed (exit status %d): %s' % (
        ' '.join(command), done.returncode, done.stderr.strip()))
  return done.stdout


def rate_text(rate):
  """200000000 -> '200mbit' (tc's units, decimal)."""
  for unit, scale in (('gbit', 10**9), ('mbit', 10**6), ('kbit', 10**3)):
    if rate >= scale and rate % scale == 0:
      return '%d%s' % (rate // scale, unit)
  return '%dbit' % rate


def _burst(rate):
  return max(MIN_BURST_BYTES, int(rate / 8 * BURST_SECS))


def namespaces():
  """Names of every network namespace of the machine."""
  return [line.split()[0] for line in run(['ip', 'netns', 'list'],
                                          check=False).splitlines()
          if line.strip()]


def _alive(pid):
  try:
    os.kill(pid, 0)
  except ProcessLookupError:
    return False
  except PermissionError:
    return True
  return True


def delete_namespace(name):
  """Kills every process inside namespace `name`, then deletes it."""
  pids = run(['ip', 'netns', 'pids', name], check=False).split()
  for pid in pids:
    try:
      os.kill(int(pid), signal.SIGKILL)
    except (ProcessLookupError, ValueError):
      pass
  run(['ip', 'netns', 'delete', name], check=False)


def owner(name):
  """The pid in namespace name `name` ('vmgr123-sw': 123), or None."""
  match = _NAME.match(name)
  return int(match.group('pid')) if match else None


def remove_runs(prefix=PREFIX, pid=None):
  """Deletes the namespaces of run `pid` of `prefix`; with pid None, those
  of every run of `prefix` whose process is gone. Returns their names."""
  removed = []
  for name in namespaces():
    match = _NAME.match(name)
    if not match or match.group('prefix') != prefix:
      continue
    owner = int(match.group('pid'))
    if (owner == pid) if pid is not None else not _alive(owner):
      delete_namespace(name)
      removed.append(name)
  return removed


class Host(object):
  """One host: its namespace, address and the bridge port of its link."""

  def __init__(self, index, namespace, address, port_name, attached=True):
    self.index = index
    self.namespace = namespace
    self.address = address
    self.port_name = port_name  # The veth end on the bridge (switch ns).
    self.attached = attached

  def command(self, argv):
    """`argv` run inside this host's namespace."""
    return ['ip', 'netns', 'exec', self.namespace] + list(argv)


class Network(object):
  """Host namespaces on one bridge, every link shaped to `rate` both ways.

  Args:
    num_hosts: how many hosts (one a task).
    rate: bits/s of every link, both ways; None leaves them unshaped.
    prefix: the first part of every namespace name (lowercase letters).
    owner: the pid in the names (default: this process's).
  """

  def __init__(self, num_hosts, rate, prefix=PREFIX, owner=None):
    if not 1 <= num_hosts <= 200:
      raise ValueError('num_hosts must be 1 to 200, got %r' % num_hosts)
    self.rate = rate
    self.prefix = prefix
    self.owner = os.getpid() if owner is None else owner
    self.switch = '%s%d-sw' % (prefix, self.owner)
    self.hosts = [Host(i, '%s%d-%d' % (prefix, self.owner, i),
                       '%s%d' % (SUBNET, i + 1), 'h%d' % i)
                  for i in range(num_hosts)]
    self.outsiders = []
    self._made = []

  def describe(self):
    return ('%d hosts %s%d-%s/%d on bridge %s of namespace %s, every link %s '
            'both ways' % (
                len(self.hosts), SUBNET, 1, len(self.hosts), NETMASK, BRIDGE,
                self.switch, 'shaped to %s' % rate_text(self.rate)
                if self.rate else 'unshaped'))

  def create(self):
    """Makes the network; on any failure removes what was made and raises
    NetworkSetupError. Deletes the leftovers of dead runs first."""
    check_supported()
    remove_runs(self.prefix)
    try:
      self._add_namespace(self.switch)
      self._ip(self.switch, 'link', 'add', BRIDGE, 'type', 'bridge')
      self._ip(self.switch, 'link', 'set', BRIDGE, 'up')
      for host in self.hosts:
        self._add_host(host)
    except BaseException:
      self.remove()
      raise
    return self

  def _add_namespace(self, name):
    self._made.append(name)
    run(['ip', 'netns', 'add', name])
    self._ip(name, 'link', 'set', 'lo', 'up')

  @staticmethod
  def _ip(namespace, *argv):
    return run(['ip', '-n', namespace] + list(argv))

  def _add_host(self, host):
    self._add_namespace(host.namespace)
    if host.attached:
      self._ip(self.switch, 'link', 'add', host.port_name, 'type', 'veth',
               'peer', 'name', HOST_DEVICE, 'netns', host.namespace)
      self._ip(self.switch, 'link', 'set', host.port_name, 'master', BRIDGE)
      self._ip(self.switch, 'link', 'set', host.port_name, 'up')
      self._ip(host.namespace, 'addr', 'add', '%s/%d' % (host.address,
                                                         NETMASK),
               'dev', HOST_DEVICE)
      self._ip(host.namespace, 'link', 'set', HOST_DEVICE, 'up')
      if self.rate:
        self.set_rate(host, self.rate, change=False)

  def add_outsider(self, attached=True):
    """A host that runs no task: on the bridge (`attached`, an address of
    the subnet) or with no link at all. Removed with the network."""
    index = len(self.outsiders)
    host = Host(index, '%s%d-o%d' % (self.prefix, self.owner, index),
                '%s%d' % (SUBNET, 250 - index) if attached else None,
                'o%d' % index, attached)
    self.outsiders.append(host)
    self._add_host(host)
    return host

  def host(self, host):
    return self.hosts[host] if isinstance(host, int) else host

  def set_rate(self, host, rate, change=True):
    """Shapes host `host`'s link (a Host or an index) to `rate` both ways."""
    host = self.host(host)
    action = 'change' if change else 'add'
    for namespace, device in ((host.namespace, HOST_DEVICE),
                              (self.switch, host.port_name)):
      run(['tc', '-n', namespace, 'qdisc', action, 'dev', device, 'root',
           'tbf', 'rate', rate_text(rate), 'burst', str(_burst(rate)),
           'latency', LATENCY])

  def set_link(self, host, up):
    """Takes host `host`'s link down (its bridge port: the host's eth0
    loses its carrier) or up again."""
    host = self.host(host)
    self._ip(self.switch, 'link', 'set', host.port_name,
             'up' if up else 'down')

  def remove(self):
    """Kills what runs in the namespaces, deletes them (never raises)."""
    for name in reversed(self._made):
      delete_namespace(name)
    self._made = []

  def __enter__(self):
    return self.create()

  def __exit__(self, *exc):
    self.remove()


# -- Measuring a link and reaching a port from a namespace -----------------

RECEIVER_SCRIPT = r'''
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2])))
s.listen(1)
s.settimeout(%(timeout)g)
sys.stdout.write('ready\n'); sys.stdout.flush()
c, _ = s.accept()
c.settimeout(%(timeout)g)
n, first, last = 0, None, None
while True:
  d = c.recv(1 << 16)
  if not d:
    break
  last = time.time()
  if first is None:
    first = last
  else:
    n += len(d)
print(n * 8.0 / max(last - first, 1e-9))
'''

SENDER_SCRIPT = r'''
import socket, sys, time
c = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=%(timeout)g)
buf = b'\0' * (1 << 16)
end = time.time() + float(sys.argv[3])
while time.time() < end:
  c.sendall(buf)
c.close()
'''

_PROBE = r'''
import socket, sys
try:
  socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=float(sys.argv[3])).close()
  print('reachable')
except (OSError, socket.timeout) as e:
  print('unreachable: %s' % (e.strerror or e))
'''


def goodput(sender, receiver, seconds=2.0, port=5201):
  """Single-stream TCP goodput in bits/s from Host `sender` to Host
  `receiver` (both of one Network), measured for `seconds`."""
  timeout = seconds + 20.0
  listener = subprocess.Popen(
      receiver.command([sys.executable, '-c',
                        RECEIVER_SCRIPT % {'timeout': timeout},
                        receiver.address, str(port)]),
      stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
  try:
    if listener.stdout.readline().strip() != 'ready':
      raise NetworkSetupError('the goodput receiver did not start: %s' %
                              listener.stderr.read())
    run(sender.command([sys.executable, '-c',
                        SENDER_SCRIPT % {'timeout': timeout},
                        receiver.address, str(port), str(seconds)]))
    out, err = listener.communicate(timeout=timeout)
  finally:
    if listener.poll() is None:
      listener.kill()
      listener.communicate()
  try:
    return float(out.strip())
  except ValueError:
    raise NetworkSetupError('the goodput receiver failed: %s' % err.strip())


def probe(host, address, timeout=2.0):
  """('reachable' or 'unreachable: why') of a TCP connect from Host `host`
  to 'ip:port'."""
  ip, port = address.rsplit(':', 1)
  return run(host.command([sys.executable, '-c', _PROBE, ip, port,
                           str(timeout)])).strip()


def wait_until(predicate, timeout, interval=0.2):
  """Polls `predicate()` until true or `timeout` seconds; returns it."""
  end = time.time() + timeout
  while True:
    value = predicate()
    if value or time.time() > end:
      return value
    time.sleep(interval)
