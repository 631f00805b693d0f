"""Loads a script of benchmarks/ as a module, as `python benchmarks/NAME.py`
would run it but without its main: a script that puts benchmarks/ and the
repository on the path does so when loaded, and its packages
(`benchmarks.network`, `benchmarks.overhead`) import after it."""

import importlib.util
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
BENCHMARKS = os.path.join(ROOT, 'benchmarks')


def load(name):
  """benchmarks/`name`.py as a module named `name`."""
  spec = importlib.util.spec_from_file_location(
      name, os.path.join(BENCHMARKS, name + '.py'))
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module
