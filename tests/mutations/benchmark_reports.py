"""What the benchmark prints and writes: the step lines and totals
(output.py), the benchmark scripts' measurements and reports (measure.py,
report.py), the --compare sweep's table and chart (compare.py,
compare_chart.py).

Entries of tests/mutation_check.py; see its docstring for the keys.
"""

MEASURE = 'tests/benchmark/reports/test_measure.py::'
REPORT = 'tests/benchmark/reports/test_report.py::'
OUTPUT = 'tests/benchmark/reports/test_output.py::'
COMPARE = 'tests/benchmark/runs/test_compare.py::'
CHART = 'tests/benchmark/reports/test_compare_chart.py::'

MUTATIONS = [
    # -- A run's lines (output.py) --------------------------------------------
    # The header's global batch of one worker only, in a cluster.
    dict(name='output-global-batch-of-one-worker',
         path='variable_mgr/benchmark/reports/output.py',
         old="  log('Batch size:  %d global' % (per_worker * num_workers))\n",
         new="  log('Batch size:  %d global' % per_worker)\n",
         tests=['tests/benchmark/runs/test_rough_edges.py::test_a_cluster_header_'
                'gives_the_cluster_batch']),
    # The mean of the steps' speeds, where tf_cnn_benchmarks divides the
    # batch by the mean step time. tests/benchmark/reports/test_output.py was
    # written for this entry (no test read the step line's figures).
    dict(name='output-images-per-sec-mean-of-speeds',
         path='variable_mgr/benchmark/reports/output.py',
         old='  mean = batch_size / np.mean(times)\n',
         new='  mean = np.mean(speeds)\n',
         tests=[OUTPUT + 'test_perf_timing_is_tf_cnn_benchmarks']),
    # Step lines at 0-based multiples of display_every: steps 1, 4, 7
    # instead of tf_cnn_benchmarks' 1, 3, 6 (test_output.py too).
    dict(name='output-step-lines-a-step-late',
         path='variable_mgr/benchmark/reports/output.py',
         old='  if step == 0 or (step + 1) % display_every == 0:\n',
         new='  if step % display_every == 0:\n',
         tests=[OUTPUT + 'test_step_lines_at_the_first_step_and_every_'
                'display_every']),
    # -- The scripts' measurements (measure.py) --------------------------------
    # Every round in the same order: a change of the machine's load then
    # falls on the same candidate each round.
    dict(name='measure-rounds-not-rotated',
         path='variable_mgr/benchmark/reports/measure.py',
         old='    for name in rotated(names, r):\n',
         new='    for name in names:\n',
         tests=[MEASURE + 'test_rounds_rotate_the_order_and_time_every_'
                'candidate']),
    dict(name='measure-median-of-an-even-count-is-the-upper',
         path='variable_mgr/benchmark/reports/measure.py',
         old='  return Spread(statistics.median(values), min(values), '
             'max(values), values)\n',
         new='  return Spread(statistics.median_high(values), min(values), '
             'max(values), values)\n',
         tests=[MEASURE + 'test_spread_of_an_even_count_is_the_middle_mean']),
    dict(name='measure-ratio-upside-down',
         path='variable_mgr/benchmark/reports/measure.py',
         old='  return [a / b for a, b in zip(mine, theirs)]\n',
         new='  return [b / a for a, b in zip(mine, theirs)]\n',
         tests=[MEASURE + 'test_ratios_pair_the_same_round']),
    # -- Reports (report.py) ----------------------------------------------------
    # A missed goal counts the rounds above it instead of those at or below.
    dict(name='report-rounds-on-the-wrong-side',
         path='variable_mgr/benchmark/reports/markdown.py',
         old='  count = above if ok else s.rounds - above\n',
         new='  count = above\n',
         tests=[REPORT + 'test_goal_verdict_counts_the_rounds_on_the_other_'
                'side']),
    dict(name='report-right-alignment-written-left',
         path='variable_mgr/benchmark/reports/markdown.py',
         old="  rule = '|' + ''.join('---:|' if a == 'r' else '---|' for a in "
             "align)\n",
         new="  rule = '|' + ''.join(':---|' if a == 'r' else '---|' for a in "
             "align)\n",
         tests=[REPORT + 'test_table_lines']),
    # -- The --compare sweep (compare.py, compare_chart.py) --------------------
    # Speed-up over one tower reported as the efficiency.
    dict(name='compare-efficiency-not-per-tower',
         path='variable_mgr/benchmark/runs/compare.py',
         old='      out[(strategy, towers)] = ips / (towers * base)\n',
         new='      out[(strategy, towers)] = ips / base\n',
         tests=[COMPARE + 'test_efficiency_is_speedup_over_towers']),
    # fp16_auto sets the dynamic scale but not --use_fp16.
    dict(name='compare-fp16-auto-without-fp16',
         path='variable_mgr/benchmark/runs/compare.py',
         old="    if token.startswith('fp16'):\n",
         new="    if token == 'fp16':\n",
         tests=[COMPARE + 'test_option_set_overrides']),
    dict(name='chart-one-tower-count-written-singular',
         path='variable_mgr/benchmark/reports/compare_chart.py',
         old="                                   '' if towers == [1] else 's')\n",
         new="                                   '' if len(towers) == 1 else "
             "'s')\n",
         tests=[CHART + 'test_legend_lists_the_series_with_data_and_the_'
                'footnote_the_rest']),
    # One option set counted as several: every label gets ', plain'.
    dict(name='chart-one-option-set-named-in-the-labels',
         path='variable_mgr/benchmark/reports/compare_chart.py',
         old='  several = len(set(r.options for r in rows)) > 1\n',
         new='  several = len(set(r.options for r in rows)) >= 1\n',
         tests=[CHART + 'test_without_a_missing_point_no_footnote']),
]
