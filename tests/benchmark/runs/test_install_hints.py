"""What a missing optional package prints names the install that adds it
as README.md gives installs: from the checkout, `pip install -e '.[extra]'`
(not an index name such as `variable_mgr[plot]`, nor an extra that does not
say what it is for)."""

import sys

import pytest

from variable_mgr.benchmark import cli
from variable_mgr.benchmark.data import datasets
from variable_mgr.benchmark.models import blocks
from variable_mgr.benchmark.runs import compare


def test_compare_without_matplotlib_names_the_plot_extra(
    tmp_path, capsys, monkeypatch):
  def fake_run(config, log=print):
    del config, log
    return {'images_per_sec': 100.0, 'final_loss': 1.0,
            'config': {'batch_size': 32},
            'step_seconds': [0.1, 0.1]}

  monkeypatch.setattr(compare.local_run, 'run_one', fake_run)
  monkeypatch.setattr(compare, 'write_chart', lambda *args, **kwargs: False)
  out_dir = tmp_path / 'cmp'
  assert cli.main(['--compare', '--compare_strategies', 'replicated',
                   '--compare_towers', '1', '--model', 'trivial',
                   '--compare_dir', str(out_dir)]) == 0
  assert ("matplotlib is not installed: no chart written (pip install "
          "matplotlib, or pip install -e '.[plot]' in the checkout)"
          ) in capsys.readouterr().out.splitlines()
  assert (out_dir / compare.TABLE_FILE).exists()


def test_digits_without_scikit_learn_names_the_data_extra(monkeypatch):
  monkeypatch.setitem(sys.modules, 'sklearn', None)  # Its import fails.
  with pytest.raises(datasets.DataDirError) as raised:
    datasets.get_dataset('digits').check_subset('train')
  assert str(raised.value).startswith('digits needs scikit-learn (')
  assert str(raised.value).endswith(
      "): pip install scikit-learn, or pip install -e '.[data]' in the "
      'checkout')


def test_layers_without_keras_2_name_the_layers_extra(monkeypatch):
  class WithoutLayers(object):

    def __getattr__(self, name):
      if name == 'layers':
        raise AttributeError('`layers` is not available with Keras 3.')
      return getattr(blocks.tf, name)

  monkeypatch.setattr(blocks, 'tf', WithoutLayers())
  with pytest.raises(blocks.LayersUnavailableError,
                     match=r"\(pip install -e '\.\[layers\]' in the "
                     r'checkout\) and set TF_USE_LEGACY_KERAS=1'):
    blocks.v1_layers()
