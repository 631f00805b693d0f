"""All-reduce of `[tower][tensor]` gradients for the replicated strategies.

Modules, one concept each:

* `algorithms`: copy, ring, shuffle, halving_doubling, hierarchical_copy,
  nccl, collective; each `fn(tower_tensors, devices, **params)` returns the
  per-tower sums, `[[A, B], [C, D]] -> [[A+C, B+D], [A+C, B+D]]`.
* `spec`: the --all_reduce_spec grammar (`parse_spec`, `build_all_reduce`,
  `all_reduce_fn`).
* `packing`: repacking into N packs, small-tensor aggregation and float16
  transfer, as wrappers of an all-reduce.
* `traffic`: bytes sent and received per device in one step, and the ring
  lower bound.
* `layout`: validation and flat chunking of `[tower][tensor]`.
* `errors`: one error class per failure condition.

Importing this package builds nothing and changes no TensorFlow state.
"""
