"""All-reduce: the ring, spec ranges and suffixes, small-tensor packing, two
stages (variable_mgr/allreduce/).

Entries of tests/mutation_check.py; see its docstring for the keys.
"""

from .nodes import (ALLREDUCE_ALGORITHMS,
                    ALLREDUCE_SPEC,
                    ALLREDUCE_PACKING,
                    ALLREDUCE_WORKERS,
                    ALL_REDUCE_FLAGS)

MUTATIONS = [
    dict(name='allreduce-ring-hop-short',
         path='variable_mgr/allreduce/algorithms.py',
         old='        for hop in range(1, k):\n',
         new='        for hop in range(1, k - 1):\n',
         tests=[ALLREDUCE_ALGORITHMS + 'test_two_by_two_picture',
                ALLREDUCE_ALGORITHMS + 'test_sum_on_every_tower[ring-3-'
                'float32]']),
    dict(name='allreduce-chunk-sizes-off-by-one',
         path='variable_mgr/allreduce/layout.py',
         old='  return [base + 1 if p < extra else base for p in range(parts)]\n',
         new='  return [base + 1 if p <= extra else base for p in range(parts)]\n',
         tests=[ALLREDUCE_ALGORITHMS + 'test_sum_on_every_tower[ring-3-'
                'float32]']),
    # Before tf_cnn_benchmarks' meaning: a range took tensors of fewer than
    # `limit` bytes.
    dict(name='allreduce-range-limit-exclusive',
         path='variable_mgr/allreduce/spec.py',
         old='      if spec_range.limit is None or size <= spec_range.limit:\n',
         new='      if spec_range.limit is None or size < spec_range.limit:\n',
         tests=[ALLREDUCE_SPEC + 'test_limit_counts_elements_and_includes_'
                'its_value[1k-1024]',
                ALLREDUCE_SPEC + 'test_32k_example_sums_at_the_limit']),
    dict(name='allreduce-range-limit-in-bytes',
         path='variable_mgr/allreduce/spec.py',
         old='    size = layout.num_elements(towers[0][i])\n',
         new='    size = layout.num_bytes(towers[0][i])\n',
         tests=[ALLREDUCE_SPEC + 'test_limit_is_elements_whatever_the_dtype',
                ALLREDUCE_SPEC + 'test_limit_counts_elements_and_includes_'
                'its_value[1k-1024]']),
    dict(name='allreduce-suffix-K-decimal',
         path='variable_mgr/allreduce/spec.py',
         old="_SUFFIXES = {'': 1, 'k': 1 << 10, 'K': 1 << 10,",
         new="_SUFFIXES = {'': 1, 'k': 1 << 10, 'K': 1000,",
         tests=[ALLREDUCE_SPEC + 'test_limit_counts_elements_and_includes_'
                'its_value[1K-1024]']),
    dict(name='allreduce-suffix-T-as-G',
         path='variable_mgr/allreduce/spec.py',
         old="             'T': 1 << 40}\n",
         new="             'T': 1 << 30}\n",
         tests=[ALLREDUCE_SPEC + 'test_limit_counts_elements_and_includes_'
                'its_value[1T-1099511627776]']),
    dict(name='allreduce-small-tensor-bound-exclusive',
         path='variable_mgr/allreduce/packing.py',
         old='             and 0 < layout.num_bytes(t) <= max_bytes)\n',
         new='             and 0 < layout.num_bytes(t) < max_bytes)\n',
         tests=[ALLREDUCE_PACKING + 'test_small_tensor_groups_are_upstreams_'
                'runs',
                ALL_REDUCE_FLAGS + 'test_small_gradient_limit_is_per_tensor_'
                'and_inclusive']),
    # Before tf_cnn_benchmarks' meaning: max_bytes bounded a whole group.
    dict(name='allreduce-small-bytes-bound-the-group',
         path='variable_mgr/allreduce/packing.py',
         old='    if run and (not small or t.dtype != tensors[run[-1]].dtype):\n',
         new='    if run and (not small or t.dtype != tensors[run[-1]].dtype or\n'
             '                sum(layout.num_bytes(tensors[j]) for j in run)\n'
             '                + layout.num_bytes(t) > max_bytes):\n',
         tests=[ALLREDUCE_PACKING + 'test_small_tensor_groups_keep_max_group',
                ALL_REDUCE_FLAGS + 'test_small_gradient_limit_is_per_tensor_'
                'and_inclusive']),
    dict(name='allreduce-small-run-spans-large-tensors',
         path='variable_mgr/allreduce/packing.py',
         old='    if run and (not small or t.dtype != tensors[run[-1]].dtype):\n',
         new='    if run and small and t.dtype != tensors[run[-1]].dtype:\n',
         tests=[ALLREDUCE_PACKING + 'test_small_tensor_groups_are_upstreams_'
                'runs']),
    dict(name='allreduce-small-last-run-dropped',
         path='variable_mgr/allreduce/packing.py',
         old='  close_run()\n  return groups\n',
         new='  return groups\n',
         tests=[ALLREDUCE_PACKING + 'test_small_tensor_groups_are_upstreams_'
                'runs']),
    # tf_cnn_benchmarks' extract_ranges admits max_group + 2 tensors.
    dict(name='allreduce-small-group-upstream-off-by-two',
         path='variable_mgr/allreduce/packing.py',
         old='    for start in range(0, len(run), max_group):\n'
             '      group = tuple(run[start:start + max_group])\n',
         new='    for start in range(0, len(run), max_group + 2):\n'
             '      group = tuple(run[start:start + max_group + 2])\n',
         tests=[ALLREDUCE_PACKING + 'test_small_tensor_groups_keep_max_group']),
    dict(name='allreduce-two-stage-outer-skipped',
         path='variable_mgr/allreduce/spec.py',
         old='  if len(workers) == 1:\n    return local\n',
         new='  if len(workers) >= 1:\n    return local\n',
         tests=[ALLREDUCE_WORKERS + 'test_spec_sums_across_two_workers['
                'pscpu/pscpu]']),
    dict(name='allreduce-two-stage-outer-drops-a-worker',
         path='variable_mgr/allreduce/spec.py',
         old='                        [[local[r][i] for i in indices] for r in '
             'reps],\n',
         new='                        [[local[reps[0]][i] for i in indices] for '
             'r in reps],\n',
         tests=[ALLREDUCE_WORKERS + 'test_spec_sums_across_two_workers['
                'xring/xring]']),
    dict(name='allreduce-two-stage-copies-back-the-local-sum',
         path='variable_mgr/allreduce/spec.py',
         old='            result[d][i] = tf.identity(value)\n',
         new='            result[d][i] = tf.identity(local[d][i])\n',
         tests=[ALLREDUCE_WORKERS + 'test_spec_sums_across_two_workers['
                'pscpu/pscpu]',
                ALLREDUCE_WORKERS + 'test_spec_sums_across_two_workers['
                'pscpu:7:xring/xring]']),
    # -- The spec's error and the traffic meter --------------------------------
    # A position counted from 1, as a person counts, where the message and
    # the attribute say 0-based.
    dict(name='allreduce-spec-error-position-from-one',
         path='variable_mgr/allreduce/errors.py',
         old='        % (spec, token, position, reason))\n',
         new='        % (spec, token, position + 1, reason))\n',
         tests=[ALLREDUCE_SPEC + 'test_grammar_error_points_at_token']),
    dict(name='traffic-received-bytes-counted-on-the-sender',
         path='variable_mgr/allreduce/traffic.py',
         old='      totals[receiver][1] += size\n',
         new='      totals[sender][1] += size\n',
         tests=['tests/allreduce/test_allreduce_traffic.py::test_hand_worked_'
                'graph']),
    # The ring's bound without its factor 2: reduce-scatter only, no
    # all-gather.
    dict(name='traffic-ring-bound-halved',
         path='variable_mgr/allreduce/traffic.py',
         old='  return 2.0 * (num_devices - 1) / num_devices * total_bytes\n',
         new='  return (num_devices - 1.0) / num_devices * total_bytes\n',
         tests=['tests/allreduce/test_allreduce_traffic.py::test_ring_lower_'
                'bound']),
]
