"""--compare's chart, read off its artists: every text inside the figure,
one legend of the series with data in rows filled evenly, one colour a
series in both panels, bars from the slowest step to the fastest."""

import numpy as np
import pytest

from variable_mgr.benchmark.reports import compare_chart
from variable_mgr.benchmark.runs import compare

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
  # The texts laid out to the figure's width keep compare_chart.MARGIN_PX
  # from its sides.
  for text in [title, machine, footnote, chart.legend]:
    extent = text.get_window_extent(renderer)
    assert extent.x0 >= fig.bbox.x0 + compare_chart.MARGIN_PX - 0.5, text
    assert extent.x1 <= fig.bbox.x1 - compare_chart.MARGIN_PX + 0.5, text
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
  # Several option sets: the strategies' colours, then the sets' styles,
  # of the series with data (9 entries for 8 series of 3 strategies and 4
  # sets; 20 series would still be 3 + 4).
  drawn = _drawn_labels(rows)
  assert labels == sorted(set(l.split(', ')[0] for l in drawn)) + [
      'options: %s' % o for o in sorted(set(l.split(', ')[1] for l in drawn))]
  assert labels == ['independent', 'parameter_server', 'replicated',
                    'options: bpps2', 'options: fp16', 'options: plain',
                    'options: relaxed']
  # 'relaxed' ran under replicated only; fp16 was refused at 2 towers only.
  assert 'independent, relaxed' not in drawn
  assert 'replicated, fp16' in drawn
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


def _styles(chart, panel):
  """{label: (colour, marker, line style)} of a panel's lines."""
  return dict((label, (colors.to_rgba(lines[panel].get_color()),
                       lines[panel].get_marker(),
                       lines[panel].get_linestyle()))
              for label, lines in chart.series.items() if panel in lines)


def test_a_colour_a_strategy_and_a_style_an_option_set(chart):
  rows = _rows()
  speed, eff = _panels(chart)
  assert sorted(speed) == _drawn_labels(rows)
  assert sorted(eff) == sorted(set(speed) - {'parameter_server, plain'})
  styles = _styles(chart, compare_chart.SPEED)
  assert _styles(chart, compare_chart.EFFICIENCY) == dict(
      (label, styles[label]) for label in eff)  # The same in both panels.
  by_strategy, by_options = {}, {}
  for label, (colour, marker, line) in styles.items():
    strategy, options = label.split(', ')
    by_strategy.setdefault(strategy, set()).add(colour)
    by_options.setdefault(options, set()).add((marker, line))
  # One colour a strategy, one marker and line style an option set, each
  # its own; so every series its own look.
  assert all(len(c) == 1 for c in by_strategy.values())
  assert len(set(c.pop() for c in by_strategy.values())) == len(by_strategy)
  assert all(len(m) == 1 for m in by_options.values())
  marks = [m.pop() for m in by_options.values()]
  assert len(set(marks)) == len(marks)
  assert len(set(styles.values())) == len(styles)
  # The legend's entries draw what they name.
  handles = (chart.legend.legend_handles
             if hasattr(chart.legend, 'legend_handles')
             else chart.legend.legendHandles)  # < 3.7
  for text, handle in zip(chart.legend.get_texts(), handles):
    name = text.get_text()
    mine = [v for l, v in styles.items() if l.split(', ')[0] == name or
            'options: ' + l.split(', ')[1] == name]
    assert mine, name
    if name.startswith('options: '):
      assert (handle.get_marker(), handle.get_linestyle()) == mine[0][1:]
    else:
      assert colors.to_rgba(handle.get_color()) == mine[0][0]


def test_one_option_set_keeps_a_colour_a_series():
  rows = [_row(s, k, 100.0 * k, 'plain') for s in ('a', 'b', 'c')
          for k in (1, 2)]
  chart = compare_chart.draw_chart(rows, 'title')
  styles = _styles(chart, compare_chart.SPEED)
  assert [t.get_text() for t in chart.legend.get_texts()] == ['a', 'b', 'c']
  assert len(set(c for c, _, _ in styles.values())) == 3


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


def _bars(chart):
  """{label: [(towers, bottom, top)]} of the images/sec panel's error bars."""
  bars = {}
  for container in chart.figure.axes[0].containers:
    _, _, (lines,) = container.lines
    bars[container.get_label()] = [
        (s[0][0], min(s[0][1], s[1][1]), max(s[0][1], s[1][1]))
        for s in lines.get_segments()]
  return bars


def test_a_bar_spans_the_slowest_to_the_fastest_step(chart):
  """A point's bar runs from its slowest step's images/sec to its
  fastest's (_row: 0.8 and 1.5 times the run's); when the run's images/sec
  lies outside that range, the bar starts at the point."""
  bars = _bars(chart)
  for label, panels in chart.series.items():
    speeds = panels[compare_chart.SPEED].get_ydata()
    towers = panels[compare_chart.SPEED].get_xdata()
    np.testing.assert_allclose(
        bars[label], [(t, 0.8 * s, 1.5 * s) for t, s in zip(towers, speeds)],
        rtol=1e-12)
  below = _row('a', 1, 100.0, 'plain')._replace(step_range=(120.0, 150.0))
  above = _row('a', 2, 100.0, 'plain')._replace(step_range=(60.0, 90.0))
  assert _bars(compare_chart.draw_chart([below, above], 'title'))['a'] == [
      (1, 100.0, 150.0), (2, 60.0, 100.0)]


def test_the_legend_fills_its_rows_evenly_in_at_most_four_columns():
  """5 entries: at most 4 a row make 2 rows, so 3 columns (3 + 2), not
  4 + 1 nor one row of 5 (which fits)."""
  rows = [_row(s, k, 100.0 * k, 'plain') for s in 'abcde' for k in (1, 2)]
  chart = compare_chart.draw_chart(rows, 'title')
  chart.figure.canvas.draw()
  renderer = chart.figure.canvas.get_renderer()
  places = [t.get_window_extent(renderer) for t in chart.legend.get_texts()]
  assert [t.get_text() for t in chart.legend.get_texts()] == list('abcde')
  assert len(set(round(p.x0) for p in places)) == 3
  assert len(set(round(p.y0) for p in places)) == 2


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
