"""Measurements of the links themselves, on a network of the benchmark's
namespaces: the goodput of a rate, the queueing delay behind a full
stream, and the bridge ports' byte counters."""

import json
import sys
import time


GOODPUT_SECS = 2.0


def measure_goodput(rate):
  from variable_mgr.benchmark.cluster import netns  # pylint: disable=g-import-not-at-top
  with netns.Network(2, rate) as network:
    a, b = network.hosts
    return [netns.goodput(a, b, GOODPUT_SECS), netns.goodput(b, a,
                                                             GOODPUT_SECS)]


_LISTENER = r'''
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2])))
s.listen(128)
sys.stdout.write('ready\n'); sys.stdout.flush()
time.sleep(float(sys.argv[3]))
'''

_CONNECTS = r'''
import socket, statistics, sys, time
times = []
for _ in range(int(sys.argv[3])):
  start = time.time()
  socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=10).close()
  times.append(time.time() - start)
  time.sleep(0.1)
print(statistics.median(times))
'''


def queue_delay(rate, seconds=4.0, connects=8):
  """(idle, loaded) median seconds of a TCP connect from host a to host
  b of a 2-host network of `rate`: idle, and while a single stream fills
  the a -> b direction (the SYN waits in a's tbf queue behind the stream's
  data: the queueing delay a small message of a busy link meets)."""
  from variable_mgr.benchmark.cluster import netns  # pylint: disable=g-import-not-at-top
  import subprocess  # pylint: disable=g-import-not-at-top
  with netns.Network(2, rate) as network:
    a, b = network.hosts
    listener = subprocess.Popen(
        b.command([sys.executable, '-c', _LISTENER, b.address, '5202',
                   str(3 * seconds + 20)]),
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        universal_newlines=True)
    try:
      listener.stdout.readline()
      connect = a.command([sys.executable, '-c', _CONNECTS, b.address,
                           '5202', str(connects)])
      idle = float(netns.run(connect).strip())
      receiver = subprocess.Popen(
          b.command([sys.executable, '-c', netns.RECEIVER_SCRIPT % {
              'timeout': seconds + 20}, b.address, '5201']),
          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
          universal_newlines=True)
      receiver.stdout.readline()
      sender = subprocess.Popen(
          a.command([sys.executable, '-c', netns.SENDER_SCRIPT % {
              'timeout': seconds + 20}, b.address, '5201',
                     str(seconds + 2.0)]),
          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
      time.sleep(1.5)
      loaded = float(netns.run(connect).strip())
      sender.wait(seconds + 30)
      receiver.communicate(timeout=seconds + 30)
    finally:
      for p in (listener,):
        if p.poll() is None:
          p.kill()
          p.communicate()
  return idle, loaded


def port_bytes(network):
  """{host index: (bytes the host sent, bytes it received)} from the
  bridge ports' counters (one `ip -s -j link` in the switch namespace)."""
  from variable_mgr.benchmark.cluster import netns  # pylint: disable=g-import-not-at-top
  out = netns.run(['ip', '-n', network.switch, '-s', '-j', 'link', 'show'],
                  check=False)
  ports = {h.port_name: h.index for h in network.hosts}
  counters = {}
  try:
    for link in json.loads(out or '[]'):
      if link.get('ifname') in ports:
        stats = link['stats64']
        # The bridge port receives what the host sends.
        counters[ports[link['ifname']]] = (stats['rx']['bytes'],
                                           stats['tx']['bytes'])
  except (ValueError, KeyError):
    return {}
  return counters


# Reads every bridge port's byte counters each `interval` seconds (sysfs
# of the switch namespace: `ip netns exec` mounts the namespace's own)
# and prints `time rx tx rx tx ...` a line.
_SAMPLER = r'''
import os, sys, time
interval = float(sys.argv[1])
fds = []
for port in sys.argv[2:]:
  for way in ('rx', 'tx'):
    fds.append(os.open('/sys/class/net/%s/statistics/%s_bytes' % (port, way),
                       os.O_RDONLY))
while True:
  values = [os.pread(fd, 32, 0).strip().decode() for fd in fds]
  sys.stdout.write('%.6f %s\n' % (time.time(), ' '.join(values)))
  sys.stdout.flush()
  time.sleep(interval)
'''

SAMPLE_SECS = 0.005


class LinkSampler(object):
  """The bridge ports' counters every SAMPLE_SECS while a cell runs, to
  tell the part of a step a link carries data from the part it idles
  (`busy_seconds`)."""

  def __init__(self, network, path):
    self.network = network
    self.path = path
    self.process = None

  def start(self):
    import subprocess  # pylint: disable=g-import-not-at-top
    ports = [h.port_name for h in self.network.hosts]
    with open(self.path, 'w') as out:
      self.process = subprocess.Popen(
          ['ip', 'netns', 'exec', self.network.switch, sys.executable, '-c',
           _SAMPLER, str(SAMPLE_SECS)] + ports, stdout=out,
          stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)

  def stop(self):
    if self.process is not None and self.process.poll() is None:
      self.process.kill()
    if self.process is not None:
      self.process.wait()

  def samples(self):
    """[(time, {host index: (sent, received)})] as sampled."""
    hosts = [h.index for h in self.network.hosts]
    found = []
    with open(self.path) as f:
      for line in f:
        parts = line.split()
        if len(parts) != 1 + 2 * len(hosts):
          continue
        values = [int(x) for x in parts[1:]]
        # The bridge port receives what the host sends.
        found.append((float(parts[0]), {
            h: (values[2 * i], values[2 * i + 1])
            for i, h in enumerate(hosts)}))
    return found


def busy_seconds(samples, t0, t1, bytes_per_sec):
  """{host: (sent, received, either)}: the seconds within [t0, t1] in which
  the host's link carried more than `bytes_per_sec` out, in, or either way
  (each interval between two samples counted whole by its mean rate)."""
  busy = {}
  inside = [s for s in samples if t0 <= s[0] <= t1]
  for (ta, a), (tb, b) in zip(inside, inside[1:]):
    dt = tb - ta
    if dt <= 0:
      continue
    for host in a:
      if host not in b:
        continue
      out = (b[host][0] - a[host][0]) / dt > bytes_per_sec
      into = (b[host][1] - a[host][1]) / dt > bytes_per_sec
      sent, received, either = busy.get(host, (0.0, 0.0, 0.0))
      busy[host] = (sent + dt * out, received + dt * into,
                    either + dt * (out or into))
  return busy
