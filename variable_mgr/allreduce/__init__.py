"""All-reduce algorithms, the --all_reduce_spec grammar, packing and a traffic meter."""
