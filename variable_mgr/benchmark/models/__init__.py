"""The benchmark's models: their input shapes and the graphs of their losses.

`catalog` names every model `--model` takes and builds its tower;
`blocks` holds the layer helpers those towers are made of.

Imports nothing else of the benchmark: `training/` and the runs import it.
"""
