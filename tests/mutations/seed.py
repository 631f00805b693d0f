"""The seed's bugs, each guarded by tests/test_seed_bugs.py.

Entries of tests/mutation_check.py; see its docstring for the keys.
"""

from .nodes import SEED_BUGS

MUTATIONS = [
    dict(name='seed-local-getter-collections-unbound',
         path='variable_mgr/placement.py',
         old="    collections = kwargs.get('collections')\n",
         new="    collections = kwargs['collections']\n",
         tests=[SEED_BUGS + 'test_local_getter_without_collections_kwarg']),
    dict(name='seed-local-getter-remove-global',
         path='variable_mgr/placement.py',
         old='    collections = [c for c in collections if c != '
             'tf.GraphKeys.GLOBAL_VARIABLES]\n',
         new='    collections.remove(tf.GraphKeys.GLOBAL_VARIABLES)\n',
         tests=[SEED_BUGS + 'test_local_getter_with_collections_lacking_'
                'global']),
    dict(name='seed-local-getter-ps-var-drops-name',
         path='variable_mgr/placement.py',
         old='    if name.startswith(PS_SHADOW_VAR_PREFIX):\n'
             '      return getter(name, *args, **kwargs)\n',
         new='    if name.startswith(PS_SHADOW_VAR_PREFIX):\n'
             '      return getter(*args, **kwargs)\n',
         tests=[SEED_BUGS + 'test_local_getter_ps_var_keeps_name_and_global']),
    # Not a seed bug: a local getter written like tf.local_variable.
    dict(name='local-getter-not-trainable',
         path='variable_mgr/placement.py',
         old="    kwargs['collections'] = collections\n",
         new="    kwargs['collections'] = collections\n"
             "    kwargs['trainable'] = False\n",
         tests=[SEED_BUGS + 'test_local_getter_in_a_scope_keeps_trainable']),
    dict(name='seed-caching-device-unknown-shape',
         path='variable_mgr/placement.py',
         old='  if shape is None:\n    return 0\n'
             '  count = tf.TensorShape(shape).num_elements()\n'
             '  return 0 if count is None else count\n',
         new='  return tf.TensorShape(shape).num_elements()\n',
         tests=[SEED_BUGS + 'test_caching_device_unknown_shape_goes_to_small_'
                'device']),
    dict(name='seed-device-setter-ignores-var-handle-op',
         path='variable_mgr/placement.py',
         old='    if op.type not in compat.VARIABLE_OP_TYPES:\n',
         new="    if op.type not in ('Variable', 'VariableV2'):\n",
         tests=[SEED_BUGS + 'test_param_server_device_setter_spreads_resource_'
                'variables']),
    dict(name='seed-staging-get-list',
         path='variable_mgr/compat.py',
         old='  if isinstance(value, (list, tuple)):\n    (value,) = value\n',
         new='',
         tests=[SEED_BUGS + 'test_staging_get_is_a_tensor',
                SEED_BUGS + 'test_staged_ps_runs_with_resource_variables']),
    dict(name='seed-staged-model-variable-ref',
         path='variable_mgr/staging.py',
         old='    return compat.to_ref_or_handle(self.real_var)\n',
         new='    return self.real_var._ref()  # pylint: disable=protected-access\n',
         tests=[SEED_BUGS + 'test_staged_model_variable_of_a_resource_'
                'variable']),
    # The strategies get the towers' iterators, which the checks consumed.
    dict(name='seed-one-shot-zip-strategy',
         path='variable_mgr/base.py',
         old='    apply_devices, payload = self._preprocess(towers)\n',
         new='    apply_devices, payload = self._preprocess(device_grads)\n',
         tests=[SEED_BUGS + 'test_preprocess_accepts_one_shot_iterators']),
    dict(name='seed-one-shot-zip-state',
         path='variable_mgr/base.py',
         old='GradientState(apply_devices, towers, payload,',
         new='GradientState(apply_devices, device_grads, payload,',
         tests=[SEED_BUGS + 'test_preprocess_accepts_one_shot_iterators_'
                'parameter_server']),
    dict(name='seed-retain-tower-updates',
         path='variable_mgr/base.py',
         old='    return device_num == 0\n',
         new='    return device_num == 0 and not self.each_tower_has_variables()\n',
         tests=[SEED_BUGS + 'test_retain_tower_updates_tower_zero_with_tower_'
                'copies']),
    dict(name='seed-checkpoint-names-not-canonical',
         path='variable_mgr/base.py',
         old='      name = self._canonical_name(strip_port(var.op.name))\n',
         new='      name = strip_port(var.op.name)\n',
         tests=[SEED_BUGS + 'test_variables_to_save_have_canonical_names_local',
                SEED_BUGS + 'test_checkpoint_restores_across_strategies']),
    dict(name='seed-distributed-replicated-saves-locals',
         path='variable_mgr/strategies/distributed_replicated.py',
         old='    return tf.global_variables() + tf.local_variables()\n',
         new='    return tf.local_variables()\n',
         tests=[SEED_BUGS + 'test_variables_to_save_distributed_replicated_'
                'are_masters']),
]
