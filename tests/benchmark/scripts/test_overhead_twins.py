"""The overhead benchmark's twins compute what the library's strategies do.

`benchmarks/run_overhead_benchmarks.py` times each strategy against its
twin, the same towers written in plain TensorFlow; the comparison is fair
only if both are the same computation. Here each pair, at 2 towers on
LeNet, starts from the same values and must agree after 2 steps, with
resource and with ref variables (where the twin's own ordering of updates
after reads is what keeps it equal).
"""

import importlib

import numpy as np
import pytest

import scriptlib


def _overhead():
  scriptlib.load('run_overhead_benchmarks')  # Puts benchmarks/ and the root on the path.
  return importlib.import_module('benchmarks.overhead')


@pytest.mark.parametrize('strategy', ['independent', 'parameter_server',
                                      'replicated'])
def test_twin_equals_library_after_two_steps(strategy, variable_kind):
  ob = _overhead()
  library = ob.build(ob.library_label(strategy), 'lenet', 2, variable_kind)
  twin = ob.build(ob.twin_label(strategy), 'lenet', 2, variable_kind)
  assert list(library.variables) == list(twin.variables)
  with ob.open_session(library) as lib_sess, \
       ob.open_session(twin) as twin_sess:
    names = list(library.variables)
    start = lib_sess.run([library.variables[n] for n in names])
    ob.check_twin(library, lib_sess, twin, twin_sess, steps=2)
    end = lib_sess.run([library.variables[n] for n in names])
    end_twin = twin_sess.run([twin.variables[n] for n in names])
  for name, a, b in zip(names, end, end_twin):
    np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6, err_msg=name)
  # Two steps moved every variable: the equality is not of two idle runs.
  for name, a, b in zip(names, start, end):
    assert np.max(np.abs(a - b)) > 0, name

