"""Cross-checks of the flags that choose how replicated moves gradients:
`--hierarchical_copy` and `--compact_gradient_transfer` (imports no
TensorFlow).

As tf_cnn_benchmarks reads them:

* `--hierarchical_copy` all-reduces with the hierarchical copy
  (`--all_reduce_spec=hcopy` here), under `--variable_update=replicated`,
  and needs two towers or more (tf_cnn_benchmarks refuses `--num_gpus=1`).
  tf_cnn_benchmarks lets `--all_reduce_spec` win silently and ignores the
  flag under another strategy; here both are refused, as is `--use_nccl`
  (another all-reduce) and `--compare` (a sweep of strategies and tower
  counts).
* `--compact_gradient_transfer` is on by default and acts only with
  `--use_fp16` under replicated: the gradients travel as float16. Typed on
  where it cannot act (without `--use_fp16`, under another strategy) it is
  refused rather than ignored; `--nocompact_gradient_transfer` is always
  accepted.
"""

from variable_mgr.benchmark.flags.as_typed import given
from variable_mgr.benchmark.flags.as_typed import typed_name
from variable_mgr.benchmark.flags.as_typed import value
from variable_mgr.benchmark.flags.value_types import UsageError


def check(args, typed):
  """Refuses `--hierarchical_copy` and `--compact_gradient_transfer` where
  they cannot act.

  Args:
    args: the parsed flags.
    typed: the destinations of the flags the command line gives.

  Raises:
    UsageError: naming the flags as typed, the rule and the fix.
  """
  _check_hierarchical_copy(args, typed)
  _check_compact_transfer(args, typed)


def _check_hierarchical_copy(args, typed):
  if not args.hierarchical_copy:
    return
  flag = typed_name(args, 'hierarchical_copy')
  if args.compare:
    raise UsageError(
        '%s with --compare: the sweep runs several strategies and tower '
        'counts, and the hierarchical copy is an all-reduce of replicated '
        'on 2 towers or more; drop %s (or run one configuration with '
        '--variable_update=replicated --num_gpus=2 or more)' % (flag, flag))
  if args.variable_update != 'replicated':
    raise UsageError(
        '%s with %s: the hierarchical copy is an all-reduce of replicated; '
        'pass --variable_update=replicated or drop %s' % (
            flag, value(args, 'variable_update'), flag))
  if args.all_reduce_spec is not None:
    raise UsageError(
        '%s with %s: both choose the all-reduce (tf_cnn_benchmarks would use '
        '--all_reduce_spec and ignore %s); drop one of them (%s is '
        '--all_reduce_spec=hcopy)' % (flag, given(args, 'all_reduce_spec'),
                                      flag, flag))
  if args.use_nccl:
    raise UsageError(
        '%s with %s: both choose the all-reduce; drop one of them' % (
            flag, typed_name(args, 'use_nccl')))
  if args.num_gpus < 2:
    raise UsageError(
        '%s with %s: the hierarchical copy all-reduces between towers, and '
        'tf_cnn_benchmarks requires --num_gpus greater than 1 for it; pass '
        '--num_gpus=2 or more, or drop %s' % (
            flag, given(args, 'num_gpus'), flag))
  del typed


def _check_compact_transfer(args, typed):
  if 'compact_gradient_transfer' not in typed or (
      not args.compact_gradient_transfer):
    return
  flag = typed_name(args, 'compact_gradient_transfer')
  if args.compare:
    return  # The sweep's replicated runs with fp16 sets use it.
  if not args.use_fp16:
    raise UsageError(
        '%s without --use_fp16: it acts with --use_fp16 only (the '
        'gradients then travel as float16; on by default), as in '
        'tf_cnn_benchmarks; add --use_fp16 or drop %s' % (flag, flag))
  if args.variable_update != 'replicated':
    raise UsageError(
        '%s with %s: it acts on replicated\'s all-reduce only, as in '
        'tf_cnn_benchmarks; pass --variable_update=replicated or drop %s' % (
            flag, value(args, 'variable_update'), flag))
