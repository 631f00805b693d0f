"""Packaging for variable_mgr.

TensorFlow is not a hard requirement: install the build you want (1.15 on
Python 3.7, or any 2.x), or take `pip install .[cpu]` for tensorflow-cpu.
"""

import setuptools

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
        'cpu': ['tensorflow-cpu'],
        'tests': ['pytest', 'hypothesis', 'numpy'],
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
