"""benchmarks/RESULTS.md: the sections other scripts write (all-reduce
goals, library overhead) survive run_benchmarks.py's rewrites and each
other's, and each is replaced in place, not repeated, by its own script."""

import scriptlib


def _run_benchmarks():
  return scriptlib.load('run_benchmarks')


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


def test_two_sections_keep_their_place(tmp_path):
  rb = _run_benchmarks()
  path = str(tmp_path / 'RESULTS.md')
  rb.write_keeping_section(path, '# Results\n\nbody\n')
  rb.write_section(path, ['all-reduce 1'])
  rb.write_section(path, ['overhead 1'], 'library overhead',
                   'run_overhead_benchmarks.py')
  rb.write_section(path, ['all-reduce 2'])
  rb.write_keeping_section(path, '# Results\n\nnew body\n')
  rb.write_section(path, ['overhead 2'], 'library overhead',
                   'run_overhead_benchmarks.py')
  begin, end = rb.section_markers('library overhead',
                                  'run_overhead_benchmarks.py')
  with open(path) as f:
    text = f.read()
  assert text == ('# Results\n\nnew body\n\n' + rb.SECTION_BEGIN +
                  '\nall-reduce 2\n' + rb.SECTION_END + '\n\n' + begin +
                  '\noverhead 2\n' + end + '\n')
