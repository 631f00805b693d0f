"""The benchmark's flags: the table, parsing, the checks and their refusals.

Entries of tests/mutation_check.py; see its docstring for the keys.
"""

MUTATIONS = [
    dict(name='flag-paths-unwritable-directory-accepted',
         path='variable_mgr/benchmark/flag_paths.py',
         old='    why = _cannot_create(path)\n',
         new='    why = None\n',
         tests=['tests/benchmark/test_flag_parsing.py::test_an_output_path_'
                'root_cannot_write_is_refused_before_the_run[--train_dir-'
                '/proc/1-extra5-the directory is not writable]']),
    dict(name='flag-paths-summary-dir-unchecked',
         path='variable_mgr/benchmark/flag_paths.py',
         old='  return [\'output\', \'trace_file\', \'train_dir\', '
             '\'summary_dir\']\n',
         new='  return [\'output\', \'trace_file\', \'train_dir\']\n',
         tests=['tests/benchmark/test_flag_parsing.py::test_an_output_path_'
                'root_cannot_write_is_refused_before_the_run[--summary_dir-'
                '/proc/foo-extra1-the directory /proc is not writable]']),
]
