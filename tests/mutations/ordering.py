"""Update ordering: every update after every read of its variable
(variable_mgr/ordering.py, gradient_state.py, accumulation.py).

Entries of tests/mutation_check.py; see its docstring for the keys.
"""

from .nodes import ORDERING

MUTATIONS = [
    # The seed's race: updates ordered after nothing but their gradient.
    dict(name='ordering-none',
         path='variable_mgr/ordering.py',
         old='  if grad is None or not ops:\n    return grad\n',
         new='  if True:\n    return grad\n',
         tests=[ORDERING + 'test_an_update_waits_for_a_late_read_of_its_'
                'variable',
                ORDERING + 'test_every_update_follows_every_read_of_its_'
                'variable',
                ORDERING + 'test_distributed_updates_wait_for_their_own_'
                'reads_only']),
    # The step-wide barrier this library had: every update after every
    # gradient of every tower.
    dict(name='ordering-step-wide-barrier',
         path='variable_mgr/base.py',
         old='    apply_devices, payload = self._preprocess(towers)\n',
         new='    every = [g.op for t in towers for g, _ in t if g is not None]\n'
             '    waits = dict((k, w + every) for k, w in waits.items())\n'
             '    apply_devices, payload = self._preprocess(towers)\n',
         tests=[ORDERING + 'test_independent_towers_wait_for_nothing_of_each_'
                'other',
                ORDERING + 'test_the_last_layer_does_not_wait_for_the_first_'
                'layers_gradient',
                ORDERING + 'test_distributed_updates_wait_for_their_own_'
                'reads_only']),
    # TF 1.x cond and loop bodies walked through as if they were plain ops:
    # a control edge from an untaken branch kills the update.
    dict(name='ordering-into-control-flow',
         path='variable_mgr/ordering.py',
         old="_CONTROL_FLOW_ENTRIES = frozenset(['Switch', 'RefSwitch', "
             "'Enter', 'RefEnter'])\n",
         new='_CONTROL_FLOW_ENTRIES = frozenset()\n'
             "FORWARDING_OP_TYPES = FORWARDING_OP_TYPES | frozenset(['Switch', "
             "'RefSwitch', 'Enter', 'RefEnter', 'Merge', 'RefMerge', 'Exit', "
             "'RefExit', 'NextIteration', 'RefNextIteration'])\n",
         tests=[ORDERING + 'test_reads_inside_cond_and_while_loop']),
    # A ref variable's aliases not followed past the ops that pass its
    # buffer on (its own read Identity, a StopGradient): the readers behind
    # them are missed.
    dict(name='ordering-aliases-not-followed',
         path='variable_mgr/ordering.py',
         old='        frontier.extend(consumer.outputs)\n',
         new='        pass\n',
         tests=[ORDERING + 'test_an_update_waits_for_a_late_read_of_its_'
                'variable',
                ORDERING + 'test_every_update_follows_every_read_of_its_'
                'variable']),
    dict(name='relaxed-deferred-read-unordered',
         path='variable_mgr/accumulation.py',
         old='ORDER_DEFERRED_READS = True\n',
         new='ORDER_DEFERRED_READS = False\n',
         tests=['tests/test_relaxed_consistency.py::'
                'test_a_late_read_of_the_deferred_gradient_is_ordered']),
    dict(name='gradient-state-waits-looked-up-by-tensor-name',
         path='variable_mgr/gradient_state.py',
         old='    return ordering.after(grad, self.waits.get(var.op.name, ()), '
             'self._index)\n',
         new='    return ordering.after(grad, self.waits.get(var.name, ()), '
             'self._index)\n',
         tests=[ORDERING + 'test_an_update_waits_for_a_late_read_of_its_'
                'variable[resource-replicated]',
                ORDERING + 'test_an_update_waits_for_a_late_read_of_its_'
                'variable[resource-ps_cpu]']),
]
