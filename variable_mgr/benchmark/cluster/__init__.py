"""The benchmark across a ps/worker cluster on TensorFlow's gRPC runtime.

Every task runs a `tf.train.Server`; a PS task serves variables until
every worker has said it finished, a worker builds the training graph with
the library's distributed strategies through `variable_mgr.ClusterBenchmarkCnn`
and trains. Faults end every task: each session call has a deadline, and a
failed call names the task found dead.

Modules, in the order a task uses them:

- `task_spec`: which task this process is, from flags or `TF_CONFIG`;
- `task`: runs that task and turns its errors into an exit status;
- `ps_task`, `worker_task`: the loops of a PS task and of a worker;
- `worker_graph`: a worker's graph around the harness's towers (global
  step, barriers, the queues through which tasks signal each other);
- `servers`: a task's gRPC server and session configs;
- `deadline`: session calls with a deadline and a watchdog;
- `liveness`: TCP probes that tell dead tasks from live ones;
- `launcher`: `--launch_local_cluster`, every task a process on 127.0.0.1.

May import every other room of the benchmark (a controller runs
`runs.local_run`'s steps); only the entry points (`cli`, `distributed`)
import it.
"""
