"""The package's names: `dir(variable_mgr)` lists every public name before
its module is imported (PEP 562's `__dir__`), so completion and `help`
show what `from variable_mgr import ...` can take."""

import variable_mgr


def test_dir_lists_every_public_name_and_the_modules_own():
  names = dir(variable_mgr)
  assert names == sorted(names)
  assert set(variable_mgr.__all__) <= set(names)
  assert {'__version__', '__all__', '__getattr__'} <= set(names)
  # Nothing but the module's globals and the exports.
  assert set(names) == set(vars(variable_mgr)) | set(variable_mgr.__all__)
