"""`python -m variable_mgr.benchmark`: see variable_mgr.benchmark.cli."""

import sys

from variable_mgr.benchmark.cli import main

if __name__ == '__main__':
  sys.exit(main())
