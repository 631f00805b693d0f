"""The machine a results file names (reports.markdown.machine): the CPU
model from /proc/cpuinfo, else what the platform says, else "unknown
CPU"; the RAM from /proc/meminfo; the processors this process may use."""

import io
import os

import pytest

from variable_mgr.benchmark.reports import markdown

CPUINFO = 'processor\t: 0\nmodel name\t: Made-up CPU @ 2.00GHz\nflags\t: x\n'
MEMINFO = 'MemTotal:       24641536 kB\nMemFree: 1 kB\n'


def _files(monkeypatch, cpuinfo, meminfo):
  """/proc/cpuinfo and /proc/meminfo read as given (None: unreadable)."""
  real_open = open

  def fake_open(path, *args, **kwargs):
    text = {'/proc/cpuinfo': cpuinfo, '/proc/meminfo': meminfo}.get(
        path, False)
    if text is False:
      return real_open(path, *args, **kwargs)
    if text is None:
      raise IOError('no such file: %s' % path)
    return io.StringIO(text)

  monkeypatch.setattr(markdown, 'open', fake_open, raising=False)


@pytest.mark.parametrize('processor,cpuinfo,want', [
    ('x86_64', CPUINFO, 'Made-up CPU @ 2.00GHz'),
    ('x86_64', 'processor\t: 0\n', 'x86_64'),
    ('', 'processor\t: 0\n', 'unknown CPU'),
    ('', None, 'unknown CPU'),
    ('arm', None, 'arm'),
])
def test_the_cpu_model(monkeypatch, processor, cpuinfo, want):
  monkeypatch.setattr(markdown.platform, 'processor', lambda: processor)
  _files(monkeypatch, cpuinfo, MEMINFO)
  cpu, processors, memory = markdown.machine()
  assert cpu == want
  assert memory == ', 23.5 GiB RAM'  # 24641536 kB / 1024 / 1024
  assert processors == len(os.sched_getaffinity(0))


def test_no_memory_line_without_meminfo(monkeypatch):
  _files(monkeypatch, CPUINFO, None)
  assert markdown.machine()[2] == ''
