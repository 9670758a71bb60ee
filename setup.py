"""Builds the metric core's one compiled module, in place: ``python setup.py build_ext --inplace`` (``make native``).

``evaluation._fastscore``, from the C files of ``evaluation/fastscore_c/`` (its README says what each holds and
the rules they keep), is the command line's scorer for plain runs (no numpy to import, so a BSARD-sized run
scores in a fraction of trec_eval's time). It is optional: without it every run takes the numpy path, with the
same numbers. The project itself is not installed as a package; this file builds the extension only.
"""

from glob import glob

from setuptools import Extension, setup

SOURCES = sorted(glob("evaluation/fastscore_c/*.c"))

setup(
    name="lexboard-evaluation-native",
    version="0",
    py_modules=[],
    packages=[],
    # -fvisibility=hidden: the files call each other directly, not through the PLT; PyInit__fastscore alone is
    # exported (PyMODINIT_FUNC marks it visible).
    ext_modules=[Extension("evaluation._fastscore", SOURCES, depends=sorted(glob("evaluation/fastscore_c/*.h")),
                           extra_compile_args=["-O2", "-Wall", "-Wextra", "-Wno-unused-parameter",
                                               "-fvisibility=hidden"])],
)
