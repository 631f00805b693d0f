"""Packaging for variable_mgr.

TensorFlow is not a hard requirement: install the build you want, or take
an extra that picks the TensorFlow of your Python:

* Python 3.7: TensorFlow 1.15.5, the last 1.x release, with the pins it
  needs (numpy < 1.19, protobuf < 4, h5py 2.10). `cpu` installs
  `tensorflow==1.15.5` (its CPU build), `gpu` installs
  `tensorflow-gpu==1.15.5` (CUDA 10.0; it also runs on a machine without a
  GPU). Without these pins pip would pick TensorFlow 2.11, outside the
  versions this project supports.
* Python 3.8: `cpu` installs `tensorflow-cpu`, `gpu` `tensorflow` (2.12
  or 2.13; tensorflow-gpu 2.12 is an empty package that refuses to
  install).
* Python 3.9 and later: `cpu` and `gpu` install `tensorflow` with
  `tf_keras` (tf_keras depends on `tensorflow`, so taking tensorflow-cpu
  there would install TensorFlow twice; the `tensorflow` wheel runs on the
  CPU where no GPU is).

Models written with tf.compat.v1.layers need Keras 2. TensorFlow 1.15 and
2.x up to 2.15 bundle it; from 2.16 on it is the `tf_keras` package, whose
version must match TensorFlow's (tf_keras 2.21 for TensorFlow 2.21), with
TF_USE_LEGACY_KERAS=1 set before TensorFlow is imported. The `cpu`, `gpu`
and `layers` extras add tf_keras on Python 3.9 and later only, so that 1.15
(Python 3.7) and 2.x up to 2.13 (Python 3.8) installs do not pull it. Beside
an installed tensorflow-cpu, `pip install --no-deps tf_keras==<TensorFlow's
version>` avoids a second copy of TensorFlow.

scikit-learn (the `data` and `tests` extras) provides the bundled digits
data set (`--data_name=digits`) and the sample images the tests use.
"""

import setuptools

# Keras 2 for tf.compat.v1.layers on TensorFlow 2.16 and later.
KERAS_2 = 'tf_keras; python_version >= "3.9"'
PY37 = '; python_version < "3.8"'
# What TensorFlow 1.15.5 needs pinned beside it: its protobuf code breaks on
# protobuf 4, its C API on numpy 1.19 and later; h5py 3 needs a newer numpy.
TF1_PINS = [pin + PY37 for pin in ('numpy==1.18.5', 'protobuf==3.20.3',
                                   'h5py==2.10.0')]

setuptools.setup(
    name='variable_mgr',
    version='0.1.0',
    description=('Variable managers for data-parallel training in '
                 'TensorFlow graph mode, and a CNN benchmark that drives them'),
    license='Apache-2.0',
    packages=setuptools.find_packages(exclude=['tests', 'tests.*']),
    python_requires='>=3.7',
    install_requires=['numpy'],
    extras_require={
        'cpu': ['tensorflow==1.15.5' + PY37,
                'tensorflow-cpu; python_version == "3.8"',
                'tensorflow; python_version >= "3.9"', KERAS_2] + TF1_PINS,
        'gpu': ['tensorflow-gpu==1.15.5' + PY37,
                'tensorflow; python_version >= "3.8"', KERAS_2] + TF1_PINS,
        'layers': [KERAS_2],
        'data': ['scikit-learn'],
        'tests': ['pytest', 'pytest-timeout', 'pytest-xdist', 'hypothesis',
                  'numpy', 'scikit-learn'],
        'plot': ['matplotlib'],
    },
    entry_points={
        'console_scripts': [
            'variable_mgr_benchmark = variable_mgr.benchmark.cli:main',
        ],
    },
    classifiers=[
        'License :: OSI Approved :: Apache Software License',
        'Programming Language :: Python :: 3',
    ],
)
