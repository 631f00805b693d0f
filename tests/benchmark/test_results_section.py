"""benchmarks/RESULTS.md: the all-reduce section survives the other script's
rewrites, and is replaced, not repeated, by its own."""

import importlib.util
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def _run_benchmarks():
  spec = importlib.util.spec_from_file_location(
      'run_benchmarks', os.path.join(ROOT, 'benchmarks', 'run_benchmarks.py'))
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


def test_section_is_kept_and_replaced(tmp_path):
  rb = _run_benchmarks()
  path = str(tmp_path / 'RESULTS.md')
  rb.write_keeping_section(path, '# Results\n\nfirst body\n')
  rb.write_section(path, ['## All-reduce', '', 'old figures'])
  rb.write_section(path, ['## All-reduce', '', 'new figures'])
  rb.write_keeping_section(path, '# Results\n\nsecond body\n')
  with open(path) as f:
    text = f.read()
  assert text == ('# Results\n\nsecond body\n\n' + rb.SECTION_BEGIN +
                  '\n## All-reduce\n\nnew figures\n' + rb.SECTION_END + '\n')


def test_without_a_section_the_file_is_the_text(tmp_path):
  rb = _run_benchmarks()
  path = str(tmp_path / 'RESULTS.md')
  rb.write_keeping_section(path, '# Results\n\nbody\n')
  with open(path) as f:
    assert f.read() == '# Results\n\nbody\n'
