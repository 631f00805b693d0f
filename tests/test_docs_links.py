"""README.md and docs/*.md point only at what exists: every relative link
reaches a file (and its `#anchor` a heading of that file), and every
repository path named in backticks or a code block (`benchmarks/...`,
`variable_mgr/...`, `tests/...`) is a file or directory of the checkout."""

import glob
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

FENCE = re.compile(r'^\s*(```|~~~)')
LINK = re.compile(r'!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)')
CODE_SPAN = re.compile(r'(`+)(.+?)\1')
HEADING = re.compile(r'^(#{1,6})\s+(.*?)\s*#*\s*$')
# A path that starts at one of the checkout's top-level directories, not
# inside another path or word (`/tmp/tests/x`, `my_tests/x` are not).
TOP_DIRS = ('variable_mgr', 'benchmarks', 'tests', 'examples', 'docs', '.ci')
REPO_PATH = re.compile(r'(?<![\w./-])((?:%s)/[\w.*/-]*)' % '|'.join(
    re.escape(d) for d in TOP_DIRS))
TOP_FILES = ('setup.py', 'LICENSE', 'README.md')


def doc_files(root=ROOT):
  """README.md and every Markdown file under docs/, relative to `root`."""
  files = ['README.md']
  for path in sorted(glob.glob(os.path.join(root, 'docs', '**', '*.md'),
                               recursive=True)):
    files.append(os.path.relpath(path, root))
  return files


def split_code(text):
  """(prose lines, code lines) of a Markdown text: fenced blocks are code."""
  prose, code, fenced = [], [], False
  for line in text.splitlines():
    if FENCE.match(line):
      fenced = not fenced
      continue
    (code if fenced else prose).append(line)
  return prose, code


def slug(heading):
  """The anchor GitHub gives a heading: links become their text, then
  lower case, punctuation dropped (but - and _), spaces made hyphens."""
  text = re.sub(r'\[([^\]]*)\]\([^)]*\)', r'\1', heading)
  text = re.sub(r'[^\w\- ]', '', text.strip().lower())
  return text.replace(' ', '-')


def anchors(path):
  """Every heading anchor of the Markdown file `path`, duplicates numbered
  as GitHub numbers them (`name`, `name-1`, ...)."""
  with open(path) as f:
    prose, _ = split_code(f.read())
  seen, result = {}, set()
  for line in prose:
    match = HEADING.match(line)
    if not match:
      continue
    name = slug(match.group(2))
    count = seen.get(name, 0)
    seen[name] = count + 1
    result.add(name if count == 0 else '%s-%d' % (name, count))
  return result


def _link_problems(doc, root, prose):
  problems = []
  for line in prose:
    for target in LINK.findall(CODE_SPAN.sub('', line)):
      if re.match(r'^[a-z][a-z0-9+.-]*:', target):  # http:, mailto:, ...
        continue
      path, _, anchor = target.partition('#')
      full = (os.path.join(root, doc) if not path else
              os.path.normpath(os.path.join(root, os.path.dirname(doc),
                                            path)))
      if not os.path.exists(full):
        problems.append('%s: link %s: no file %s' % (
            doc, target, os.path.relpath(full, root)))
      elif anchor:
        if not full.endswith('.md'):
          problems.append('%s: link %s: an anchor into a file that is not '
                          'Markdown' % (doc, target))
        elif anchor not in anchors(full):
          problems.append('%s: link %s: no heading #%s in %s' % (
              doc, target, anchor, os.path.relpath(full, root)))
  return problems


def named_paths(prose, code):
  """The repository paths a document names: in code spans of its prose and
  anywhere in its code blocks. Paths with an elision (`...`, `<d>`) are
  patterns, not names, and left out."""
  texts = [span for line in prose for _, span in CODE_SPAN.findall(line)]
  texts.extend(code)
  paths = []
  for text in texts:
    if text.strip() in TOP_FILES:
      paths.append(text.strip())
    for path in REPO_PATH.findall(text):
      path = path.rstrip('.,:;')
      if '...' not in path and '<' not in path:
        paths.append(path)
  return paths


def check(doc, root=ROOT):
  """Every broken link and every missing path of `doc` (relative to root)."""
  with open(os.path.join(root, doc)) as f:
    prose, code = split_code(f.read())
  problems = _link_problems(doc, root, prose)
  for path in named_paths(prose, code):
    if not glob.glob(os.path.join(root, path)):
      problems.append('%s: names %s, which is not in the checkout' % (
          doc, path))
  return problems


def test_the_docs_are_found():
  docs = doc_files()
  assert 'docs/README.md' in docs and len(docs) > 5, docs


@pytest.mark.parametrize('doc', doc_files())
def test_links_and_paths_resolve(doc):
  problems = check(doc)
  assert not problems, '\n'.join(problems)


def test_every_docs_page_is_linked_from_the_index():
  with open(os.path.join(ROOT, 'docs', 'README.md')) as f:
    prose, _ = split_code(f.read())
  linked = set()
  for line in prose:
    linked.update(target.partition('#')[0] for target in LINK.findall(line))
  pages = [os.path.relpath(path, os.path.join(ROOT, 'docs'))
           for path in glob.glob(os.path.join(ROOT, 'docs', '**', '*.md'),
                                 recursive=True)]
  unlinked = sorted(p for p in pages if p != 'README.md' and p not in linked)
  assert not unlinked, 'docs/README.md links none of: %s' % unlinked


def test_a_broken_link_anchor_or_path_is_reported(tmp_path):
  """The checks find what they are for, in a made-up checkout."""
  (tmp_path / 'docs').mkdir()
  (tmp_path / 'tests').mkdir()
  (tmp_path / 'tests' / 'test_a.py').write_text(u'')
  (tmp_path / 'docs' / 'page.md').write_text(
      u'# A page\n\n## Its `second` section (two)\n')
  (tmp_path / 'README.md').write_text(
      u'# Top\n\n'
      u'[fine](docs/page.md#its-second-section-two) and [self](#top)\n'
      u'[gone](docs/missing.md) [bad anchor](docs/page.md#nowhere)\n'
      u'[web](https://example.com/x) `tests/test_a.py` `tests/test_b.py`\n'
      u'`tests/...` and `v<d>/...` are patterns\n\n'
      u'```bash\npython benchmarks/run_gone.py --flag\n```\n'
      u'```\n[not a link](nowhere.md)\n```\n')
  assert check('README.md', str(tmp_path)) == [
      'README.md: link docs/missing.md: no file docs/missing.md',
      'README.md: link docs/page.md#nowhere: no heading #nowhere in '
      'docs/page.md',
      'README.md: names tests/test_b.py, which is not in the checkout',
      'README.md: names benchmarks/run_gone.py, which is not in the '
      'checkout']
  assert check(os.path.join('docs', 'page.md'), str(tmp_path)) == []


def test_headings_slug_as_github_does():
  assert slug("Does every strategy train to one tower's accuracy? (digits)") \
      == 'does-every-strategy-train-to-one-towers-accuracy-digits'
  assert slug('All-reduce algorithms and packing (`replicated`)') == (
      'all-reduce-algorithms-and-packing-replicated')
  assert slug('What changes for the harness; limitations') == (
      'what-changes-for-the-harness-limitations')


def test_the_results_files_point_at_a_heading_that_exists():
  """Every benchmarks/*RESULTS.md names in its header where its figures are
  explained: that page and heading exist."""
  from variable_mgr.benchmark.reports import markdown  # pylint: disable=g-import-not-at-top
  lines = markdown.header('T', 'run_x.py', 'abc', 'cmd', 1.0, '2.21')
  match = re.search(r'How to read the figures: (\S+), "([^"]+)"\.', lines[2])
  assert match, lines[2]
  page, heading = match.groups()
  assert slug(heading) in anchors(os.path.join(ROOT, page)), (page, heading)
