"""The benchmark's cluster: tasks, probes, deadlines, the launcher
(variable_mgr/benchmark/cluster/).

Entries of tests/mutation_check.py; see its docstring for the keys.
"""

SESSION = 'tests/distributed/test_cluster_session_config.py::'
TF_CONFIG = 'tests/distributed/test_tf_config.py::'

MUTATIONS = [
    # A periodic checkpoint of distributed_replicated taken while another
    # worker already updates the masters for the next step.
    dict(name='cluster-save-without-barrier',
         path='variable_mgr/benchmark/cluster/worker_task.py',
         old='        if g.saved_op is not None:\n',
         new='        if False:\n',
         tests=['tests/distributed/test_cluster_more_faults.py::test_readme_'
                'cluster_command_saves_every_n_steps']),
    # --trace_file on a cluster: every worker writes the path as given, the
    # last one to finish its step overwriting the others' traces.
    dict(name='cluster-trace-without-the-task',
         path='variable_mgr/benchmark/cluster/worker_task.py',
         old='      trace_path = trace.task_path(config.trace_file, spec.name)\n',
         new='      trace_path = config.trace_file\n',
         tests=['tests/distributed/test_cluster_trace.py::test_each_worker_'
                'writes_a_trace_of_its_devices']),
    # The cluster traces the first timed step even with warm-up steps: its
    # tracing cost lands in the timed steps.
    dict(name='cluster-trace-of-a-timed-step',
         path='variable_mgr/benchmark/cluster/trace.py',
         old='  return -1 if num_warmup_batches else 0\n',
         new='  return 0\n',
         tests=['tests/distributed/test_cluster_trace.py::test_traced_step_'
                'is_the_last_warm_up_step']),
    # The traced step's call without FULL_TRACE: an empty trace.
    dict(name='cluster-trace-without-full-trace',
         path='variable_mgr/benchmark/cluster/deadline.py',
         old='      options.trace_level = self.tf.RunOptions.FULL_TRACE\n',
         new='      pass\n',
         tests=['tests/distributed/test_cluster_trace.py::test_each_worker_'
                'writes_a_trace_of_its_devices']),
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
         path='variable_mgr/ordering.py',
         old='    with tf.colocate_with(v), tf.control_dependencies([op]):\n',
         new='    with tf.control_dependencies([op]):\n',
         tests=['tests/distributed/test_staged_overlap.py::'
                'test_push_waits_for_nothing_from_the_ps']),
    # A dangling `checkpoint` file found only once the cluster is up. Every
    # task reads the checkpoint's global step before its server starts
    # (run_config.check_cluster_config); the chief's own early read in
    # worker_task.py came first and now is a second guard, so taking it out
    # alone changes nothing. Here the early read takes TensorFlow's
    # latest_checkpoint, which calls a dangling file no checkpoint: a PS
    # task then starts serving. The test of every task's refusal was
    # written for this entry.
    dict(name='cluster-dangling-checkpoint-read-as-none',
         path='variable_mgr/benchmark/training/batch_target.py',
         old='  prefix = checkpoint.latest_checkpoint(train_dir) if train_dir '
             'else None\n',
         new='  prefix = tf.train.latest_checkpoint(train_dir) if train_dir '
             'else None\n',
         tests=['tests/distributed/test_cluster_refusals.py::test_a_dangling_'
                'checkpoint_is_refused_by_every_task[ps]']),
    # -- Which task this is (task_spec) ---------------------------------------
    # TF_CONFIG's chief and worker 0 both worker 0.
    dict(name='task-spec-chief-not-ahead-of-the-workers',
         path='variable_mgr/benchmark/cluster/task_spec.py',
         old="  if task_type == 'worker':\n    index += len(chief)\n",
         new='',
         tests=[TF_CONFIG + 'test_tf_config_chief_is_worker_zero']),
    dict(name='task-spec-index-one-past-the-hosts',
         path='variable_mgr/benchmark/cluster/task_spec.py',
         old='  if not 0 <= task_index < len(hosts):\n',
         new='  if not 0 <= task_index <= len(hosts):\n',
         tests=[TF_CONFIG + 'test_index_out_of_range',
                TF_CONFIG + 'test_flag_index_out_of_range']),
    # Port 65536 taken (gRPC would fail to bind it, after the other tasks
    # started). The test of the port range was written for this entry.
    dict(name='task-spec-port-65536-accepted',
         path='variable_mgr/benchmark/cluster/task_spec.py',
         old='not port.isdigit() or not 0 < int(port) < 65536:\n',
         new='not port.isdigit() or not 0 < int(port) <= 65536:\n',
         tests=[TF_CONFIG + 'test_a_port_is_1_to_65535']),
    # -- The launcher (launcher) -----------------------------------------------
    # The workers' addresses taken from the start of the list: worker k on
    # PS k's port. The test of the launched tasks' addresses was written for
    # this entry (the cluster runs would fail on the port, slowly).
    dict(name='launcher-workers-on-the-ps-ports',
         path='variable_mgr/benchmark/cluster/launcher.py',
         old='    self.worker_hosts = addresses[num_ps:num_ps + num_workers]\n',
         new='    self.worker_hosts = addresses[:num_workers]\n',
         tests=[TF_CONFIG + 'test_launched_tasks_get_an_address_each_and_the_'
                'same_host_lists']),
    # `--network_rate 200mbit` stripped but its value left: the tasks get a
    # stray '200mbit'.
    dict(name='launcher-network-rate-value-passed-on',
         path='variable_mgr/benchmark/cluster/launcher.py',
         old="      skip = '=' not in a\n",
         new='      skip = False\n',
         tests=['tests/distributed/test_netns_cluster.py::test_tasks_get_'
                'neither_launch_flag']),
    # A signal looked up by the status itself, not its negation: 'killed
    # by signal -9' (test written for this entry).
    dict(name='launcher-signal-of-the-wrong-sign',
         path='variable_mgr/benchmark/cluster/launcher.py',
         old="      return 'killed by %s' % signal.Signals(-status).name\n",
         new="      return 'killed by %s' % signal.Signals(status).name\n",
         tests=[TF_CONFIG + 'test_a_tasks_status_reads_as_its_exit_or_its_'
                'signal']),
    # -- Namespaces (netns) -----------------------------------------------------
    dict(name='netns-tc-not-checked',
         path='variable_mgr/benchmark/cluster/netns.py',
         old="  missing = [tool for tool in ('ip', 'tc') if shutil.which(tool) "
             "is None]\n",
         new="  missing = [tool for tool in ('ip',) if shutil.which(tool) "
             "is None]\n",
         tests=['tests/distributed/test_netns_cluster.py::test_missing_'
                'iproute2_is_refused_naming_the_fix']),
    # 1500kbit written as 1mbit: tc shapes the links a third slower than
    # asked. The test of rate_text was written for this entry.
    dict(name='netns-rate-rounded-down-to-a-unit',
         path='variable_mgr/benchmark/cluster/netns.py',
         old='    if rate >= scale and rate % scale == 0:\n',
         new='    if rate >= scale:\n',
         tests=['tests/distributed/test_netns_cluster.py::test_a_rate_is_'
                'written_in_tcs_units_without_rounding']),
    # -- PS tasks, servers, tasks (ps_task, servers, task, in_process) --------
    # The PS's server started without the flags: its pools ignore
    # --num_intra_threads/--num_inter_threads.
    dict(name='ps-server-without-the-thread-flags',
         path='variable_mgr/benchmark/cluster/ps_task.py',
         old='  server = servers.start_server(tf, spec, 1, options)\n',
         new='  server = servers.start_server(tf, spec, 1)\n',
         tests=[SESSION + 'test_every_task_starts_its_server_with_the_thread_'
                'flags[ps]']),
    # The PS stops once all but one worker have exited: the last one loses
    # its PS and names it instead of the dead worker.
    dict(name='ps-stops-while-a-worker-listens',
         path='variable_mgr/benchmark/cluster/ps_task.py',
         old='    if not running:\n      return True\n',
         new='    if len(running) <= 1:\n      return True\n',
         tests=['tests/distributed/test_liveness.py::test_a_ps_serves_on_until_'
                'the_other_workers_exit']),
    dict(name='servers-intra-and-inter-swapped',
         path='variable_mgr/benchmark/cluster/servers.py',
         old='  if intra:\n    config.intra_op_parallelism_threads = intra\n'
             '  config.inter_op_parallelism_threads = inter_op_threads('
             'options)\n',
         new='  if intra:\n    config.inter_op_parallelism_threads = intra\n'
             '  config.intra_op_parallelism_threads = inter_op_threads('
             'options)\n',
         tests=[SESSION + 'test_thread_flags_reach_every_server_and_session_'
                'config']),
    # The spare thread forgotten: an unset --num_inter_threads gives a
    # cluster task TensorFlow's one thread a processor.
    dict(name='servers-no-spare-inter-op-thread',
         path='variable_mgr/benchmark/cluster/servers.py',
         old='  return (markdown.processors() or 1) + 1\n',
         new='  return markdown.processors() or 1\n',
         tests=[SESSION + 'test_unset_inter_threads_are_the_processors_plus_'
                'one']),
    # --op_timeout_secs given to ConfigProto as milliseconds: every call
    # times out a thousand times sooner. The test was written for this entry.
    dict(name='servers-op-timeout-in-seconds',
         path='variable_mgr/benchmark/cluster/servers.py',
         old='      operation_timeout_in_ms=int(options.op_timeout_secs * 1000),\n',
         new='      operation_timeout_in_ms=int(options.op_timeout_secs),\n',
         tests=[SESSION + 'test_a_session_sees_its_task_and_the_ps_and_waits_'
                'op_timeout_secs']),
    # The cluster check made for workers only: a PS serves a configuration
    # its workers refuse, and waits for them. test_rough_edges.py's test of
    # this catches it after --startup_timeout_secs (5 minutes); the test in
    # test_cluster_refusals.py, written for this entry, at once.
    dict(name='task-ps-serves-before-the-cluster-check',
         path='variable_mgr/benchmark/cluster/task.py',
         old='  run_config.check_cluster_config(args, spec.cluster_dict())\n'
             "  if spec.job_name == 'ps':\n"
             '    return ps_task.run_ps(spec, args, log)\n',
         new="  if spec.job_name == 'ps':\n"
             '    return ps_task.run_ps(spec, args, log)\n'
             '  run_config.check_cluster_config(args, spec.cluster_dict())\n',
         tests=['tests/distributed/test_cluster_refusals.py::test_a_ps_task_'
                'refuses_what_its_workers_manager_would']),
    dict(name='in-process-ps-server-gets-a-gpu',
         path='variable_mgr/benchmark/runs/in_process.py',
         old="      ps_config = tf.ConfigProto(device_count={'CPU': 1, 'GPU': 0})\n",
         new="      ps_config = tf.ConfigProto(device_count={'CPU': 1})\n",
         tests=['tests/benchmark/runs/test_cli.py::test_the_in_process_cluster_of_'
                'cpu_towers_has_no_gpu_device']),
    # -- distributed_all_reduce's tasks (controller_task) ----------------------
    # The worker index checked against the workers and the controller: a
    # worker index one past the workers is taken.
    dict(name='controller-worker-index-counts-the-controller',
         path='variable_mgr/benchmark/cluster/controller_task.py',
         old="  limit = len(workers) if args.job_name == 'worker' else 1\n",
         new="  limit = len(hosts) if args.job_name == 'worker' else 1\n",
         tests=['tests/distributed/test_controller_cluster.py::test_refused']),
    # An in-process cluster whose port was taken is not started again.
    dict(name='in-process-cluster-not-retried',
         path='variable_mgr/benchmark/runs/in_process.py',
         old='START_ATTEMPTS = 3\n',
         new='START_ATTEMPTS = 1\n',
         tests=['tests/distributed/test_in_process_ports.py::test_a_taken_'
                'port_starts_the_cluster_again_on_new_ports']),
]
