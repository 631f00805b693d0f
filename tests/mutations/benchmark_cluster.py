"""The benchmark's cluster: tasks, probes, deadlines, the launcher
(variable_mgr/benchmark/cluster/).

Entries of tests/mutation_check.py; see its docstring for the keys.
"""

MUTATIONS = [
    # A periodic checkpoint of distributed_replicated taken while another
    # worker already updates the masters for the next step.
    dict(name='cluster-save-without-barrier',
         path='variable_mgr/benchmark/cluster/worker_task.py',
         old='        if g.saved_op is not None:\n',
         new='        if False:\n',
         tests=['tests/distributed/test_cluster_more_faults.py::test_readme_'
                'cluster_command_saves_every_n_steps']),
    dict(name='probe-tcp-connect-only',
         path='variable_mgr/benchmark/cluster/liveness.py',
         old='  return ANSWERED if answer else SILENT\n',
         new='  return ANSWERED\n',
         tests=['tests/distributed/test_cluster_faults.py::'
                'test_stopped_worker_is_named_by_every_survivor']),
    dict(name='no-probes-during-a-blocked-call',
         path='variable_mgr/benchmark/cluster/deadline.py',
         old='      if gone and self._pending is pending:\n',
         new='      if False:\n',
         tests=['tests/distributed/test_cluster_faults.py::'
                'test_a_killed_worker_ends_the_cluster_within_seconds']),
    dict(name='staged-barrier-wait-on-the-worker',
         path='variable_mgr/benchmark/cluster/worker_graph.py',
         old='    with tf.colocate_with(v), tf.control_dependencies([op]):\n',
         new='    with tf.control_dependencies([op]):\n',
         tests=['tests/distributed/test_staged_overlap.py::'
                'test_push_waits_for_nothing_from_the_ps']),
    dict(name='chief-restores-dangling-checkpoint-late',
         path='variable_mgr/benchmark/cluster/worker_task.py',
         old='    checkpoint.latest_checkpoint(config.train_dir)\n',
         new='    pass\n',
         tests=['tests/benchmark/test_rough_edges.py::'
                'test_a_chief_with_a_dangling_checkpoint_starts_nothing']),
]
