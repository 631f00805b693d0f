"""`--compare`'s chart: images/sec and scaling efficiency against the tower
count, one line per series (a strategy, or a strategy and an option set).

Its layout, top to bottom: the title and the machine line, each wrapped to
the figure's width; the two panels; one legend for both panels, of the
series that have data: one colour a strategy and, with several option
sets, one marker and line style a set, the legend listing the strategies'
colours and the sets' styles (not every pair); a
footnote naming the series and tower counts that have no point (refused, or
without timed batches), whose reasons the table gives. The figure grows in
height to hold the wrapped text, so the panels keep their size.

Drawn on a Figure of its own with the Agg canvas: pyplot and matplotlib's
backend are left as they were. Needs matplotlib (`pip install matplotlib`).
"""

import collections
import math
import textwrap

SPEED = 'images/sec'
EFFICIENCY = 'scaling efficiency'
REFUSED = 'refused'
NO_TIMED_BATCHES = 'no timed batches'

WIDTH_INCHES = 11.0
PANELS_INCHES = 3.6  # The panels, their tick labels and axis labels.
DPI = 100
MARGIN_PX = 8  # Between the figure's edge and any text, and between texts.

# The parts of a drawn chart, for the file and for tests:
#   figure: the matplotlib Figure, laid out and drawn;
#   texts: [title, machine line or None, footnote or None] Text artists;
#   legend: the one Legend of both panels (None without a series);
#   series: {label: {SPEED: Line2D, EFFICIENCY: Line2D}} of the series with
#     data (EFFICIENCY absent without an efficiency);
#   missing: [(label, REFUSED or NO_TIMED_BATCHES, [towers])] of the
#     points not drawn.
Chart = collections.namedtuple('Chart',
                               'figure texts legend series missing')


def series_label(strategy, options, several):
  """'replicated, fp16' with several option sets, else 'replicated'."""
  return '%s, %s' % (strategy, options) if several else strategy


def _series(rows):
  """[(label, [rows with data], [(reason, [towers])] without, strategy,
  option set)], sorted by strategy and option set; a row's reason is
  'refused' or 'no timed batches'."""
  several = len(set(r.options for r in rows)) > 1
  out = []
  for strategy, options in sorted(set((r.strategy, r.options) for r in rows)):
    mine = sorted((r for r in rows if (r.strategy, r.options) ==
                   (strategy, options)), key=lambda r: r.towers)
    drawn = [r for r in mine if not r.error and r.images_per_sec is not None]
    gaps = collections.OrderedDict()
    for r in mine:
      if r.error or r.images_per_sec is None:
        reason = REFUSED if r.error else NO_TIMED_BATCHES
        gaps.setdefault(reason, []).append(r.towers)
    out.append((series_label(strategy, options, several), drawn,
                list(gaps.items()), strategy, options))
  return out


# An option set's marker and line style, in the order of the sets.
OPTION_STYLES = (('o', '-'), ('s', '--'), ('^', ':'), ('D', '-.'),
                 ('v', (0, (5, 1))), ('P', (0, (3, 1, 1, 1))), ('X', '-'),
                 ('*', '--'))


def _styles(matplotlib, series):
  """{label: (colour, marker, line style)} of the series with data: one
  colour a strategy (tab10's; tab20's past ten) and, with several option
  sets, one marker and line style a set; with one set, one colour a
  series."""
  strategies = sorted(set(strategy for _, strategy, _, _ in series))
  options = sorted(set(option for _, _, option, _ in series))
  colours = matplotlib.colormaps['tab10' if len(strategies) <= 10 else
                                 'tab20'].colors
  styles = {}
  for label, strategy, option, _ in series:
    marker, line = OPTION_STYLES[options.index(option) % len(OPTION_STYLES)]
    styles[label] = (colours[strategies.index(strategy) % len(colours)],
                     marker, line)
  return styles


def _fit_width(fig, text, paragraphs, max_px):
  """Sets `text` to the paragraphs, each wrapped at the most characters a
  line for which the text is at most `max_px` wide."""
  renderer = fig.canvas.get_renderer()
  width = max(len(p) for p in paragraphs)
  while True:
    text.set_text('\n'.join(textwrap.fill(p, width) for p in paragraphs))
    px = text.get_window_extent(renderer).width
    if px <= max_px or width <= 10:
      return
    # Characters are about equally wide: start near the width that fits.
    width = max(10, min(width - 1, int(width * max_px / px)))


def _missing_note(missing):
  """'Not drawn, the table says why. Refused: independent, relaxed at 1, 2
  towers.' for the points without data, or None without any."""
  notes = []
  for reason in (REFUSED, NO_TIMED_BATCHES):
    parts = ['%s at %s tower%s' % (label, ', '.join(str(t) for t in towers),
                                   '' if towers == [1] else 's')
             for label, why, towers in missing if why == reason]
    if parts:
      notes.append('%s: %s.' % (reason.capitalize(), '; '.join(parts)))
  if not notes:
    return None
  return 'Not drawn, the table says why. %s' % ' '.join(notes)


def _plot(matplotlib, speed_ax, eff_ax, series):
  """Draws the lines of each series with data, in one style a series in
  both panels (`_styles`); {label: {panel: Line2D}}."""
  lines = collections.OrderedDict()
  series = [(label, strategy, options, drawn)
            for label, drawn, _, strategy, options in series if drawn]
  styles = _styles(matplotlib, series)
  for label, _, _, drawn in series:
    colour, marker, line = styles[label]
    towers = [r.towers for r in drawn]
    speeds = [r.images_per_sec for r in drawn]
    # Error bars: the slowest and the fastest step. matplotlib takes no
    # negative length, and the run's images/sec (its wall time includes the
    # time between steps) can be below its slowest step's.
    low = [max(0.0, s - r.step_range[0]) if r.step_range else 0.0
           for s, r in zip(speeds, drawn)]
    high = [max(0.0, r.step_range[1] - s) if r.step_range else 0.0
            for s, r in zip(speeds, drawn)]
    bars = speed_ax.errorbar(towers, speeds, yerr=[low, high], marker=marker,
                             linestyle=line, color=colour, capsize=3,
                             label=label)
    lines[label] = {SPEED: bars.lines[0]}
    eff = [(r.towers, r.efficiency) for r in drawn
           if r.efficiency is not None]
    if eff:
      lines[label][EFFICIENCY], = eff_ax.plot(
          [t for t, _ in eff], [e for _, e in eff], marker=marker,
          linestyle=line, color=colour, label=label)
  return lines


def _legend_entries(series, lines):
  """(handles, labels) of the legend. With one option set, a series an
  entry. With several: a strategy an entry (its colour, a plain line),
  then an option set an entry (its marker and line style, in grey), so
  that 4 strategies and 5 sets are 9 entries, not 20."""
  from matplotlib import lines as mpl_lines  # pylint: disable=g-import-not-at-top
  drawn = [(label, strategy, options) for label, rows, _, strategy, options
           in series if rows]
  if len(set(options for _, _, options in drawn)) <= 1:
    return [panels[SPEED] for panels in lines.values()], list(lines)
  handles, labels = [], []
  for strategy in sorted(set(s for _, s, _ in drawn)):
    label = [l for l, s, _ in drawn if s == strategy][0]
    handles.append(mpl_lines.Line2D(
        [], [], color=lines[label][SPEED].get_color(), linestyle='-',
        linewidth=3))
    labels.append(strategy)
  for options in sorted(set(o for _, _, o in drawn)):
    label = [l for l, _, o in drawn if o == options][0]
    speed = lines[label][SPEED]
    handles.append(mpl_lines.Line2D(
        [], [], color='dimgrey', marker=speed.get_marker(),
        linestyle=speed.get_linestyle()))
    labels.append('options: %s' % options)
  return handles, labels


def _legend(fig, entries, max_px):
  """One legend of both panels below them, in as many columns as fit (at
  most four), its rows filled evenly."""
  handles, labels = entries
  if not handles:
    return None
  renderer = fig.canvas.get_renderer()
  for most in range(min(4, len(handles)), 0, -1):
    ncol = -(-len(handles) // -(-len(handles) // most))
    legend = fig.legend(handles, labels, loc='lower center',
                        ncol=ncol, fontsize='small', frameon=False)
    if ncol == 1 or legend.get_window_extent(renderer).width <= max_px:
      return legend
    legend.remove()


def draw_chart(rows, title, machine=None):
  """The chart of `rows` (compare.Row) under `title` and `machine`, laid out
  so every text lies inside the figure; a Chart.

  Raises:
    ImportError: without matplotlib.
  """
  import matplotlib  # pylint: disable=g-import-not-at-top
  from matplotlib.backends import backend_agg  # pylint: disable=g-import-not-at-top
  from matplotlib import figure as mpl_figure  # pylint: disable=g-import-not-at-top

  fig = mpl_figure.Figure(figsize=(WIDTH_INCHES, PANELS_INCHES), dpi=DPI)
  backend_agg.FigureCanvasAgg(fig)
  max_px = fig.bbox.width - 2 * MARGIN_PX
  speed_ax, eff_ax = fig.subplots(1, 2)
  series = _series(rows)
  lines = _plot(matplotlib, speed_ax, eff_ax, series)
  for ax, ylabel in ((speed_ax, 'images/sec (bars: slowest-fastest step)'),
                     (eff_ax, 'scaling efficiency vs 1 tower')):
    ax.set_xlabel('towers')
    ax.set_ylabel(ylabel)
    ax.set_xticks(sorted(set(r.towers for r in rows)))
    ax.grid(True, alpha=0.3)
  eff_ax.axhline(1.0, color='grey', linestyle='--', linewidth=1)
  eff_ax.set_ylim(bottom=0)

  missing = [(label, why, towers) for label, _, gaps, _, _ in series
             for why, towers in gaps]
  header = [fig.text(0.5, 1.0, '', ha='center', va='top', fontsize='medium')]
  _fit_width(fig, header[0], [title], max_px)
  if machine:
    header.append(fig.text(0.5, 1.0, '', ha='center', va='top',
                           fontsize='small'))
    _fit_width(fig, header[1], [machine], max_px)
  note = _missing_note(missing)
  footnote = None
  if note:
    footnote = fig.text(0.5, 0.0, '', ha='center', va='bottom',
                        fontsize='small', style='italic')
    _fit_width(fig, footnote, [note], max_px)
  legend = _legend(fig, _legend_entries(series, lines), max_px)
  _stack(fig, header, [legend, footnote])
  fig.canvas.draw()
  return Chart(fig, header + [None] * (2 - len(header)) + [footnote],
               legend, lines, missing)


def _stack(fig, header, footer):
  """Grows the figure by the header's and footer's heights and places them:
  the header from the top down, the footer from the bottom up, the panels
  between them."""
  renderer = fig.canvas.get_renderer()

  def height_px(artists):
    return sum(a.get_window_extent(renderer).height + MARGIN_PX
               for a in artists if a is not None) + MARGIN_PX

  top_px, bottom_px = height_px(header), height_px(footer)
  # Whole pixels: the PNG's last row is then all of the figure's.
  total_px = math.ceil(PANELS_INCHES * DPI + top_px + bottom_px)
  fig.set_size_inches(WIDTH_INCHES, total_px / DPI)
  y = total_px - MARGIN_PX
  for text in header:
    text.set_y(y / total_px)
    y -= text.get_window_extent(renderer).height + MARGIN_PX
  y = MARGIN_PX
  for artist in reversed(footer):
    if artist is None:
      continue
    height = artist.get_window_extent(renderer).height
    if hasattr(artist, 'set_bbox_to_anchor'):
      artist.set_bbox_to_anchor((0.5, y / total_px), transform=fig.transFigure)
    else:
      artist.set_y(y / total_px)
    y += height + MARGIN_PX
  fig.tight_layout(rect=(0, bottom_px / total_px, 1,
                         1 - top_px / total_px))


def write_chart(rows, path, title, machine=None):
  """Draws the chart of `rows` into the PNG file `path`: True, or False
  without matplotlib."""
  try:
    import matplotlib  # pylint: disable=g-import-not-at-top,unused-import
  except ImportError:
    return False
  draw_chart(rows, title, machine).figure.savefig(path, dpi=DPI)
  return True
