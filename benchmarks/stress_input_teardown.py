#!/usr/bin/env python
"""Builds, runs and closes the ImageNet training pipeline many times (not in
CI), counting the processes that die.

    /tmp/venv37/bin/python benchmarks/stress_input_teardown.py --runs 12
    /tmp/venv37/bin/python benchmarks/stress_input_teardown.py --runs 12 \\
        --parallel-interleave

Each run is a fresh process that writes tests/benchmark/data/imagenet_files.py's
upstream layout (8 train files) and then, `--pipelines` times, builds
`datasets.InputPipeline` for 2 towers in a new graph, runs 3 steps and
closes the session with the pipeline's prefetching still going. A run
fails when its process does not exit 0 (a segmentation fault exits -11).

`--parallel-interleave` reads the record files in parallel whatever the
release (`compat.PARALLEL_INTERLEAVE`), the form TF 1.15 crashes in: its
ParallelInterleaveDatasetV2 frees a finished inner iterator on a worker
thread after the session's close freed the autotuning model the iterator
unhooks itself from (native stack: Model::RemoveNode <- ZipDatasetOp
Iterator::~Iterator <- ParallelInterleaveIterator Element, while the main
thread is in DirectSession::~DirectSession).

Measured on 2 shared cores, 2026-12-01, 30 pipelines a run:

    /tmp/venv37/bin/python benchmarks/stress_input_teardown.py --runs 12 \
        --parallel-interleave
        TF 1.15.5: 4/12 runs failed, each with exit -11 in Session.close
        (about one pipeline in 75)
    /tmp/venv37/bin/python benchmarks/stress_input_teardown.py --runs 20
        TF 1.15.5, as the benchmark reads (one file after the other): 0/20
        runs failed (600 pipelines)

tests/benchmark/data/test_datasets.py, whole file, 15 runs each on TF 1.15.5:
5/15 died (exit 139) with `compat.PARALLEL_INTERLEAVE = True`, 0/15 as read.
"""

import argparse
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
for _path in (os.path.join(ROOT, 'tests', 'benchmark', 'data'), ROOT):
  if _path not in sys.path:
    sys.path.insert(0, _path)


def run_pipelines(count, parallel):
  """`count` pipelines built, run for 3 steps and closed, in this
  process."""
  import faulthandler  # pylint: disable=g-import-not-at-top
  faulthandler.enable()
  import imagenet_files  # pylint: disable=g-import-not-at-top
  from variable_mgr import compat  # pylint: disable=g-import-not-at-top
  from variable_mgr.benchmark.data import datasets  # pylint: disable=g-import-not-at-top
  tf = compat.tf
  compat.PARALLEL_INTERLEAVE = parallel
  directory = tempfile.mkdtemp()
  imagenet_files.write_upstream_layout(directory)
  for i in range(count):
    graph = tf.Graph()
    with graph.as_default():
      pipeline = datasets.InputPipeline(
          datasets.get_dataset('imagenet', directory), 'train', 4, 2,
          (24, 24, 3), seed=i, distortions=i % 2 == 0)
      towers = [pipeline.tower(d) for d in range(2)]
      with tf.Session() as sess:
        for _ in range(3):
          sess.run(towers)


def main():
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--runs', type=int, default=12,
                      help='processes, one after the other')
  parser.add_argument('--pipelines', type=int, default=30,
                      help='pipelines built and closed in each process')
  parser.add_argument('--parallel-interleave', action='store_true',
                      help="read the files in parallel (TF 1.15's crash)")
  parser.add_argument('--child', action='store_true', help=argparse.SUPPRESS)
  args = parser.parse_args()
  if args.child:
    run_pipelines(args.pipelines, True if args.parallel_interleave else None)
    return
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2')
  failed = []
  for run in range(args.runs):
    command = [sys.executable, os.path.abspath(__file__), '--child',
               '--pipelines', str(args.pipelines)]
    if args.parallel_interleave:
      command.append('--parallel-interleave')
    result = subprocess.run(command, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    if result.returncode != 0:
      failed.append(run)
      tail = result.stderr.decode('utf-8', 'replace').strip().splitlines()
      print('run %d: exit %d; %s' % (run, result.returncode,
                                     ' | '.join(tail[-4:])))
  print('%s: %d/%d runs of %d pipelines failed (%s)' % (
      'parallel interleave' if args.parallel_interleave else 'as read',
      len(failed), args.runs, args.pipelines,
      ', '.join(str(r) for r in failed) or 'none'))
  sys.exit(1 if failed else 0)


if __name__ == '__main__':
  main()
