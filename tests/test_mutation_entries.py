"""The hand-made mutation entries (`tests/mutations/`) still fit the code:
each `old` text occurs exactly once in its file, so `mutation_check.py`
can put every bug back. A change to the library that moves an entry's text
fails here, in the suite, not at the next mutation check."""

import mutation_check
from mutations import MUTATIONS


def test_every_entry_fits_the_code():
  assert mutation_check.check_entries(MUTATIONS) == []
