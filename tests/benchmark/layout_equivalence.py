"""Checks that a move of the benchmark's modules changed no behaviour.

    python3 tests/benchmark/layout_equivalence.py --write before.json
    (move the modules, commit)
    python3 tests/benchmark/layout_equivalence.py --compare before.json

For a fixed set of command lines it records, for each, the SHA-256 of the
training graph's GraphDef (built by the harness from the parsed flags, as a
run builds it, serialized deterministically) and the header the command
prints on stdout (`python -m variable_mgr.benchmark ... --num_batches=1`,
up to its `==========` line). `--compare` exits 1 and names each command line whose
graph or header differs.

It finds the modules under their names before and after the benchmark was
laid out by concept (`flags/`, `data/`, `models/`, `training/`,
`reports/`, `runs/`), so it runs at either commit.
"""

import argparse
import hashlib
import importlib
import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))

COMMAND_LINES = [
    [],
    ['--model=lenet', '--num_gpus=2', '--variable_update=replicated'],
    ['--model=lenet', '--num_gpus=2', '--variable_update=replicated',
     '--all_reduce_spec=xring', '--gradient_repacking=2'],
    ['--model=lenet', '--num_gpus=2', '--variable_update=parameter_server',
     '--staged_vars'],
    ['--model=lenet', '--num_gpus=2', '--variable_update=independent',
     '--optimizer=momentum', '--weight_decay=0.0001'],
    ['--model=resnet20', '--data_name=cifar10', '--num_gpus=2',
     '--variable_update=replicated', '--use_fp16',
     '--fp16_enable_auto_loss_scale'],
    ['--model=alexnet', '--data_name=cifar10', '--num_gpus=2',
     '--variable_update=parameter_server', '--local_parameter_device=cpu',
     '--optimizer=rmsprop', '--gradient_clip=1.0',
     '--piecewise_learning_rate_schedule=0.1;2;0.01'],
    ['--model=trivial', '--num_gpus=2', '--variable_update=replicated',
     '--variable_consistency=relaxed'],
    ['--model=lenet', '--num_gpus=2', '--variable_update=replicated',
     '--print_training_accuracy'],
    ['--model=lenet', '--num_gpus=2',
     '--variable_update=distributed_replicated'],
]


def _module(*names):
  for name in names:
    try:
      return importlib.import_module('variable_mgr.benchmark.' + name)
    except ModuleNotFoundError as e:
      if not e.name.startswith('variable_mgr.benchmark.'):
        raise
  raise ImportError('none of %s' % (names,))


def graph_digest(argv):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  tf.compat.v1.disable_eager_execution()
  command_line = _module('flags.command_line', 'flags')
  run_config = _module('training.run_config', 'run_config')
  local_run = _module('runs.local_run', 'local_run')
  harness = _module('training.harness', 'harness')
  args = command_line.parse_args(list(argv))
  config = run_config.from_args(args).resolved()
  host, _ = local_run.make_host(config)
  with tf.Graph().as_default():
    built = harness.build_training_graph(config, host)
    graph_def = built.graph.as_graph_def()
  text = graph_def.SerializeToString(deterministic=True)
  return hashlib.sha256(text).hexdigest(), len(graph_def.node)


def header(argv):
  env = dict(os.environ, PYTHONPATH=REPO)
  out = subprocess.run(
      [sys.executable, '-m', 'variable_mgr.benchmark'] + list(argv) +
      ['--num_batches=1', '--num_warmup_batches=0'],
      cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
      universal_newlines=True, check=False).stdout
  lines = []
  for line in out.splitlines():
    lines.append(line)
    if line.startswith('=========='):
      break
  return lines


def record():
  found = {}
  for argv in COMMAND_LINES:
    key = ' '.join(argv) or '(no flags)'
    digest = subprocess.run(
        [sys.executable, __file__, '--graph-of', json.dumps(argv)],
        cwd=REPO, env=dict(os.environ, PYTHONPATH=REPO),
        stdout=subprocess.PIPE, universal_newlines=True, check=True)
    found[key] = {'graph': json.loads(digest.stdout.splitlines()[-1]),
                  'header': header(argv)}
    print('%s: %s' % (key, found[key]['graph']))
  return found


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--write')
  parser.add_argument('--compare')
  parser.add_argument('--graph-of', help=argparse.SUPPRESS)
  args = parser.parse_args(argv)
  if args.graph_of:
    print(json.dumps(graph_digest(json.loads(args.graph_of))))
    return 0
  found = record()
  if args.write:
    with open(args.write, 'w') as f:
      json.dump(found, f, indent=1)
    return 0
  with open(args.compare) as f:
    before = json.load(f)
  differ = [key for key in before if before[key] != found.get(key)]
  for key in differ:
    print('differs: %s' % key)
  print('%d command lines, %d differ' % (len(before), len(differ)))
  return 1 if differ else 0


if __name__ == '__main__':
  sys.exit(main())
