"""Settings that must precede numpy's import, for ``python -m evaluation score`` only (imported first by the package).

numpy's import starts OpenBLAS's thread pool (one thread per CPU), which costs
about 0.05 s of CPU time at start, a third of the command's startup, and
``score`` multiplies no matrix. So when this process was started as
``python -m evaluation score`` (and only then: a worker or a notebook that
imports the package keeps its BLAS threads, and ``compare``'s sign-flip
products keep theirs), ``OPENBLAS_NUM_THREADS`` is set to 1 unless the user
set it. Results do not change: nothing in scoring calls BLAS.
"""

from __future__ import annotations

import os
import sys


def started_as_score_command() -> bool:
    """Whether this interpreter is running ``python [options] -m evaluation score …`` and still importing it."""
    argv = list(getattr(sys, "orig_argv", []))
    if "-m" not in argv or sys.argv[:1] != ["-m"]:  # runpy keeps argv[0] == "-m" while it imports the package
        return False
    at = argv.index("-m")
    return argv[at + 1:at + 3] == ["evaluation", "score"]


if "numpy" not in sys.modules and started_as_score_command():
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
