"""The benchmark's command line: its flags, their values and their checks.

Owns the table of flag definitions (`table`), the value types and their
refusals (`value_types`), how a refusal names a flag as it was typed
(`as_typed`, `scan`), the cross-checks of flags that depend on each other
(`input_checks`, `mode_checks`, `rate_checks`, `allreduce_checks`,
`output_paths`), tf_cnn_benchmarks' flags this benchmark refuses by name
(`tf_cnn_refused`), the learning-rate schedule's arithmetic the checks and
the optimizer share (`lr_schedule`), and `command_line`, which parses a
command into the flag values every other room reads.

Imports nothing else of the benchmark: every other room may import it.
"""
