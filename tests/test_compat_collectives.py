"""`compat.collectives_lack_half` decides by the major version: 1.15's
collectives refuse float16, every supported 2.x carries it (the sources
read are named in its docstring). Both answers are checked on whichever
release is installed, the version forced each way."""

import pytest
import tensorflow as tf

from variable_mgr import compat


def test_the_installed_release_answers_by_its_major_version():
  major = int(tf.__version__.split('.')[0])
  assert compat.collectives_lack_half() is (major < 2)


@pytest.mark.parametrize('major,lacks', [(1, True), (2, False), (3, False)])
def test_only_a_1_x_release_lacks_half(monkeypatch, major, lacks):
  monkeypatch.setattr(compat, 'major_version', lambda: major)
  assert compat.collectives_lack_half() is lacks
