"""Runs a session's pending mutants in several processes at once.

cosmic-ray's local distributor runs one mutant at a time in one copy of
the repository (it mutates the copy in place). A mutant's tests leave much
of 2 cores idle (pytest and TensorFlow's start, graph building in one
Python thread), so run_population.py --workers N splits the pending
mutants into N shards, each a session of its own (the session's file with
the other shards' mutants deleted) run by its own `cosmic-ray exec` in its
own copy, and merges every shard's results back into the session when the
shards end, or are stopped: a stopped run loses no result, and --resume
finds the merged session's pending mutants as after a run of one process.

Shard files stay in sessions/ beside the session until they are merged
(merge_leftovers merges those of a run killed before it could).
"""

import glob
import os
import shutil
import sqlite3
import subprocess


def shard_paths(session, count):
  stem = os.path.splitext(session)[0]
  return ['%s.shard%d.sqlite' % (stem, i) for i in range(count)]


def pending_jobs(session):
  connection = sqlite3.connect(session)
  try:
    return [row[0] for row in connection.execute(
        'SELECT job_id FROM work_items WHERE job_id NOT IN '
        '(SELECT job_id FROM work_results) ORDER BY rowid')]
  finally:
    connection.close()


def split(session, count):
  """Writes `count` shard sessions, the pending jobs dealt round-robin (a
  module's mutants sit together in the session: each shard gets its
  share of every module); returns their paths."""
  jobs = pending_jobs(session)
  paths = shard_paths(session, count)
  for index, path in enumerate(paths):
    shutil.copyfile(session, path)
    others = [(job,) for i, job in enumerate(jobs) if i % count != index]
    connection = sqlite3.connect(path)
    with connection:
      connection.executemany('DELETE FROM mutation_specs WHERE job_id = ?',
                             others)
      connection.executemany('DELETE FROM work_items WHERE job_id = ?',
                             others)
    connection.close()
  return paths


def merge(session, paths):
  """Copies each shard's results into the session and deletes the shard.
  Returns how many results were copied."""
  copied = 0
  connection = sqlite3.connect(session)
  try:
    for path in paths:
      if not os.path.exists(path):
        continue
      connection.execute('ATTACH DATABASE ? AS shard', (path,))
      with connection:
        copied += connection.execute(
            'INSERT OR REPLACE INTO work_results '
            'SELECT * FROM shard.work_results WHERE job_id NOT IN '
            '(SELECT job_id FROM main.work_results)').rowcount
      connection.execute('DETACH DATABASE shard')
      os.remove(path)
  finally:
    connection.close()
  return copied


def merge_leftovers(session):
  """Merges the shards a killed run left beside the session."""
  stem = os.path.splitext(session)[0]
  return merge(session, sorted(glob.glob(stem + '.shard*.sqlite')))


def run(command, config, session, copies, print_fn=print):
  """Runs `command + [config, shard]` in each copy (as many shards as
  copies) at once; merges the results when all end, or when stopped."""
  paths = split(session, len(copies))
  processes = []
  try:
    for path, copy in zip(paths, copies):
      print_fn('+ (in %s) %s' % (copy, ' '.join(command + [config, path])))
      processes.append(subprocess.Popen(command + [config, path], cwd=copy))
    failed = [p.args for p in processes if p.wait() != 0]
    if failed:
      raise SystemExit('shards: %s failed' % failed)
  finally:
    for process in processes:
      if process.poll() is None:
        process.terminate()
    for process in processes:
      process.wait()
    print_fn('shards: %d results merged into %s'
             % (merge(session, paths), session))
