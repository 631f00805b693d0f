"""`--trace_file` on a cluster: each worker writes a Chrome trace of one of
its steps, to the given path with its task inserted before the extension
(`trace.json` -> `trace.worker1.json`; a path without an extension gets
`.worker1` appended), so that the workers of one command line never write
the same file.

The traced step is the one a run on one machine traces: the last warm-up
step (past the first steps' one-time costs, and its tracing cost stays out
of the timed steps), or the first timed step without warm-up. Its
`RunMetadata` holds the step stats of every device this worker's session
ran ops on (its towers, its CPU, and the ops of its graph placed on PS
tasks), each op's start and end, collectives and transfers included: when
each gradient is ready, and when its transfer starts and ends.

PS tasks run no steps and write nothing; a `distributed_all_reduce`
controller runs the cluster's one graph as a run on one machine does and
writes the path as given, one trace of every worker's devices.
"""

import os


def task_path(path, task_name):
  """`path` with `task_name` ('worker:1') inserted before its extension:
  '/tmp/trace.json' -> '/tmp/trace.worker1.json'."""
  root, extension = os.path.splitext(path)
  return '%s.%s%s' % (root, task_name.replace(':', ''), extension)


def traced_step(num_warmup_batches):
  """The step to trace, counted as the step loops count them (warm-up steps
  negative, the first timed step 0)."""
  return -1 if num_warmup_batches else 0


def write(path, run_metadata):
  """Writes `run_metadata`'s step stats to `path` as a Chrome trace
  (chrome://tracing, Perfetto), with TensorFlow's own writer (1.15 and
  2.x)."""
  from tensorflow.python.client import timeline  # pylint: disable=g-import-not-at-top
  trace = timeline.Timeline(run_metadata.step_stats)
  # Its directory exists: the flags checked it before the run.
  with open(path, 'w') as f:
    f.write(trace.generate_chrome_trace_format())
