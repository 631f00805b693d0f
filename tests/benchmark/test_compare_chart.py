"""--compare's chart, read off its artists: every text inside the figure,
one legend of the series with data, one colour a series in both panels."""

import pytest

from variable_mgr.benchmark import compare
from variable_mgr.benchmark import compare_chart

matplotlib = pytest.importorskip('matplotlib')
colors = pytest.importorskip('matplotlib.colors')
mpl_image = pytest.importorskip('matplotlib.image')
mpl_text = pytest.importorskip('matplotlib.text')

REFUSAL = ("variable_consistency='relaxed' with VariableMgrIndependent: "
           'relaxed consistency defers the all-reduce of replicated')
# As long as a real one: the subtitle does not fit on one line.
MACHINE = compare.machine_line(
    '2.21.0', ('Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz, 8 cores, '
               'hyper-threaded', 64, ', 251.7 GiB RAM'))
TITLE = ('trivial, batch 4 per tower, 3 timed batches, option sets plain, '
         'relaxed, bpps2, fp16, fp16_auto, fp16+bpps4, fp16_auto+bpps4')


def _row(strategy, towers, ips, options, error=None):
  if error or ips is None:
    return compare.Row(strategy, towers, None, None, None, None, error, None,
                       options)
  return compare.Row(strategy, towers, ips, ips / (towers * 100.0),
                     1000.0 / ips, 0.5, None, (0.8 * ips, 1.5 * ips),
                     options)


def _rows():
  """The sweep of the issue (independent + relaxed refused at both tower
  counts), with fp16 refused at 2 towers only, and parameter_server without
  timed batches at 1 tower: at 2 it has images/sec and no efficiency."""
  rows = []
  for strategy in ('independent', 'replicated'):
    for towers in (1, 2):
      for i, options in enumerate(('plain', 'relaxed', 'bpps2', 'fp16')):
        ips = 100.0 * towers * (1.0 - 0.1 * i)
        error = None
        if strategy == 'independent' and options == 'relaxed':
          error = REFUSAL
        if options == 'fp16' and towers == 2:
          error = 'no float16 here'
        rows.append(_row(strategy, towers, ips, options, error))
  rows.append(_row('parameter_server', 1, None, 'plain'))
  rows.append(_row('parameter_server', 2, 150.0, 'plain')._replace(
      efficiency=None))
  return rows


def _drawn_labels(rows):
  """The series with a point: the reference the legend is checked against."""
  return sorted(set('%s, %s' % (r.strategy, r.options) for r in rows
                    if not r.error and r.images_per_sec is not None))


def _panels(chart):
  """{label: colour} of the images/sec and the efficiency panels, read off
  the axes' artists."""
  speed_ax, eff_ax = chart.figure.axes
  speed = dict((c.get_label(), colors.to_rgba(c.lines[0].get_color()))
               for c in speed_ax.containers)
  eff = dict((l.get_label(), colors.to_rgba(l.get_color()))
             for l in eff_ax.get_lines() if not l.get_label().startswith('_'))
  return speed, eff


@pytest.fixture(scope='module')
def chart():
  """The chart of _rows(), TITLE and MACHINE (one drawing for the tests that
  only read it)."""
  return compare_chart.draw_chart(_rows(), TITLE, MACHINE)


def _inside(extent, box):
  return (extent.x0 >= box.x0 and extent.x1 <= box.x1 and
          extent.y0 >= box.y0 and extent.y1 <= box.y1)


def test_every_text_lies_inside_the_figure(chart):
  fig = chart.figure
  fig.canvas.draw()
  renderer = fig.canvas.get_renderer()
  title, machine, footnote = chart.texts
  # The subtitle is wider than the figure on one line: it was wrapped, and
  # says all of the machine line.
  assert '\n' in machine.get_text()
  assert ' '.join(machine.get_text().split()) == MACHINE
  named = [title, machine, footnote] + chart.legend.get_texts()
  every = [t for t in fig.findobj(mpl_text.Text)
           if t.get_visible() and t.get_text()]
  assert set(named) <= set(every)
  for text in every:
    extent = text.get_window_extent(renderer)
    assert _inside(extent, fig.bbox), (text.get_text(), extent, fig.bbox)
  # The header above the panels, the legend and the footnote below them.
  panels_top = max(ax.get_tightbbox(renderer).y1 for ax in fig.axes)
  panels_bottom = min(ax.get_tightbbox(renderer).y0 for ax in fig.axes)
  assert machine.get_window_extent(renderer).y0 >= panels_top
  assert chart.legend.get_window_extent(renderer).y1 <= panels_bottom
  assert (footnote.get_window_extent(renderer).y1 <=
          chart.legend.get_window_extent(renderer).y0)


def test_legend_lists_the_series_with_data_and_the_footnote_the_rest(chart):
  rows = _rows()
  labels = [t.get_text() for t in chart.legend.get_texts()]
  assert labels == _drawn_labels(rows)
  assert 'independent, relaxed' not in labels
  assert 'parameter_server, plain' in labels  # Ran at 2 towers.
  assert 'replicated, fp16' in labels  # Refused at 2 towers, ran at 1.
  assert chart.figure.legends == [chart.legend]
  assert [ax.get_legend() for ax in chart.figure.axes] == [None, None]
  assert chart.missing == [
      ('independent, fp16', 'refused', [2]),
      ('independent, relaxed', 'refused', [1, 2]),
      ('parameter_server, plain', 'no timed batches', [1]),
      ('replicated, fp16', 'refused', [2])]
  assert ' '.join(chart.texts[2].get_text().split()) == (
      'Not drawn, the table says why. Refused: independent, fp16 at 2 '
      'towers; independent, relaxed at 1, 2 towers; replicated, fp16 at 2 '
      'towers. No timed batches: parameter_server, plain at 1 tower.')


def test_without_a_missing_point_no_footnote():
  rows = [_row(s, k, 100.0 * k, 'plain') for s in ('a', 'b') for k in (1, 2)]
  chart = compare_chart.draw_chart(rows, 'title')
  assert chart.texts[1:] == [None, None]
  assert [t.get_text() for t in chart.legend.get_texts()] == ['a', 'b']


def test_a_series_has_one_colour_in_both_panels(chart):
  rows = _rows()
  speed, eff = _panels(chart)
  assert sorted(speed) == _drawn_labels(rows)
  assert sorted(eff) == sorted(set(speed) - {'parameter_server, plain'})
  for label in eff:
    assert speed[label] == eff[label], label
  assert len(set(speed.values())) == len(speed)  # Each its own colour.
  legend = dict((t.get_text(), colors.to_rgba(h.get_color()))
                for t, h in zip(chart.legend.get_texts(),
                                chart.legend.legend_handles
                                if hasattr(chart.legend, 'legend_handles')
                                else chart.legend.legendHandles))  # < 3.7
  assert legend == speed


def test_points_are_the_rows_numbers(chart):
  rows = _rows()
  for label, panels in chart.series.items():
    mine = [r for r in rows if '%s, %s' % (r.strategy, r.options) == label
            and not r.error and r.images_per_sec is not None]
    speed_line = panels[compare_chart.SPEED]
    assert list(speed_line.get_xdata()) == [r.towers for r in mine]
    assert list(speed_line.get_ydata()) == pytest.approx(
        [r.images_per_sec for r in mine], rel=1e-12)
    efficiency = [r.efficiency for r in mine if r.efficiency is not None]
    if not efficiency:
      assert compare_chart.EFFICIENCY not in panels
      continue
    assert list(panels[compare_chart.EFFICIENCY].get_ydata()) == (
        pytest.approx(efficiency, rel=1e-12))


def test_write_chart_writes_the_drawn_figure(tmp_path):
  path = str(tmp_path / compare.CHART_FILE)
  rows = _rows()
  assert compare.write_chart(rows, path, TITLE, MACHINE)
  with open(path, 'rb') as f:
    assert f.read(8) == b'\x89PNG\r\n\x1a\n'
  height, width, _ = mpl_image.imread(path).shape
  fig = compare_chart.draw_chart(rows, TITLE, MACHINE).figure
  # The file's pixels are the figure's at its dpi, the last row whole.
  assert width == fig.bbox.width
  assert 0 <= fig.bbox.height - height < 1
