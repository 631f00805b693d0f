"""What `run_allreduce_benchmarks.py` measures, and against what.

The candidates (every algorithm alone and repacked, TensorFlow's private
builders), the inputs' pattern, the two tensor sets, the goals, and the
plans of a full run, of its allocator rerun and of `--quick`. Read by the
script that measures and by the one that writes the text
(`allreduce_report.py`); no TensorFlow.
"""

import collections

ALGORITHMS = ('copy', 'xring', 'xring#2', 'pscpu', 'psgpu', 'rechd', 'hcopy')
REPACKS = (1, 4)
TF_REFERENCES = ('tf ring', 'tf shuffle', 'tf rechd')
INDEPENDENT = 'independent'
BOUND_GOAL = 1.05
COST_GOAL = 1.5
GOAL_ALGORITHMS = ('xring', 'xring#2', 'rechd')
# The repacking goal asks for the bound's traffic at the copy's graph cost;
# psgpu (a reduce-scatter and all-gather through the towers) reaches the
# bound too.
REPACK_GOAL_ALGORITHMS = GOAL_ALGORITHMS + ('psgpu',)
# The inputs: element j of tensor i on tower d is (j + STRIDE i) mod MODULUS
# + d (both primes).
MODULUS, STRIDE = 65521, 7919

SETS = collections.OrderedDict([
    ('resnet50', "ResNet-50's 161 trainable variable shapes, 25.6M float32 "
                 'parameters'),
    ('lenet', "the package's LeNet-sized CNN's 8 trainable variable shapes, "
              '1.66M float32 parameters, one FC layer of 3136x512'),
])

# One worker per (set, towers): build rounds (the first into the session's
# graph, the others into fresh graphs; at least one fresh graph), rounds of
# timed steps, and steps per candidate and round. lenet builds in tens of
# milliseconds, where the machine's noise is of the same size: many builds
# there; resnet50 at 4 and 8 towers holds 400 and 800 MB of tensors and
# builds graphs of up to 30k ops: fewer rounds there.
Config = collections.namedtuple('Config',
                                'set_name towers build_rounds rounds steps')
FULL = (Config('lenet', 2, 25, 5, 3),
        Config('lenet', 4, 25, 5, 3),
        Config('lenet', 8, 25, 5, 3),
        Config('resnet50', 2, 3, 3, 1),
        Config('resnet50', 4, 3, 3, 1),
        Config('resnet50', 8, 3, 2, 1))
# Step times again with TensorFlow's BFC allocator on the CPU, for the
# copy of packs: buffers are reused instead of freshly mapped each step.
BFC_ENV = {'TF_CPU_ALLOCATOR_USE_BFC': 'true'}
ALLOCATOR_LABELS = (INDEPENDENT, 'copy', 'copy+repack1', 'copy+repack4',
                    'xring+repack1', 'xring+repack4')
ALLOCATOR_FULL = (Config('resnet50', 2, 1, 3, 1),
                  Config('resnet50', 8, 1, 2, 1))
QUICK = (Config('lenet', 2, 2, 2, 2),
         Config('lenet', 4, 2, 2, 2),
         Config('resnet50', 2, 1, 2, 1))


def candidates(include_tf):
  names = [INDEPENDENT]
  for name in ALGORITHMS:
    names.append(name)
    names.extend('%s+repack%d' % (name, n) for n in REPACKS)
  if include_tf:
    names.extend(TF_REFERENCES)
  return names
