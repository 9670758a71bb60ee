"""Builds the metric core's one compiled module, in place: ``python setup.py build_ext --inplace`` (``make native``).

``evaluation/_fastscore.c`` is the command line's scorer for plain runs (no numpy to import, so a
BSARD-sized run scores in a fraction of trec_eval's time). It is optional: without it every run takes the
numpy path, with the same numbers. The project itself is not installed as a package; this file builds the
extension only.
"""

from setuptools import Extension, setup

setup(
    name="lexboard-evaluation-native",
    version="0",
    py_modules=[],
    packages=[],
    ext_modules=[Extension("evaluation._fastscore", ["evaluation/_fastscore.c"],
                           extra_compile_args=["-O2", "-Wall", "-Wextra", "-Wno-unused-parameter"])],
)
