"""Lexboard's metric core: parse runs and qrels, score them, compare and fuse runs.

The core modules import no Django, so the same code scores on the server, in a
worker and on a researcher's laptop (``python -m evaluation ...``).

The names below are loaded from their modules when first used (PEP 562), not
when the package is imported: ``python -m evaluation score --help`` then
imports neither numpy nor the scorer, and each command of the command line
imports only the modules it needs (``evaluation.cli``).
"""

from __future__ import annotations

import sys

from . import _startup  # noqa: F401  (first: it may set an environment variable numpy reads at import)

TYPE_CHECKING = False  # typing itself is not imported: the command line's start pays for every module
if TYPE_CHECKING:
    from typing import Any

    from .corpus import CorpusIds
    from .errors import InputError, Notice, Problem, QrelsFormatError, RunFormatError
    from .measures import DEFAULT_MEASURES, Measure, parse_measure, parse_measures
    from .qrels import Qrels, read_qrels
    from .runs import Run, docid_scheme_ok, read_run, sniff_run, write_run
    from .scoring import Evaluation, evaluate, recall_curve

#: Where each public name lives.
_HOMES = {
    "CorpusIds": "corpus",
    "InputError": "errors", "Notice": "errors", "Problem": "errors", "QrelsFormatError": "errors",
    "RunFormatError": "errors",
    "DEFAULT_MEASURES": "measures", "Measure": "measures", "parse_measure": "measures", "parse_measures": "measures",
    "Qrels": "qrels", "read_qrels": "qrels",
    "Run": "runs", "docid_scheme_ok": "runs", "read_run": "runs", "sniff_run": "runs", "write_run": "runs",
    "Evaluation": "scoring", "evaluate": "scoring", "recall_curve": "scoring",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'evaluation' has no attribute {name!r}")
    __import__(f"{__name__}.{home}")
    value = getattr(sys.modules[f"{__name__}.{home}"], name)
    globals()[name] = value  # once loaded, an ordinary attribute
    return value


__all__ = [
    "CorpusIds", "InputError", "Notice", "Problem", "QrelsFormatError", "RunFormatError",
    "DEFAULT_MEASURES", "Measure", "parse_measure", "parse_measures", "Qrels", "read_qrels",
    "Run", "docid_scheme_ok", "read_run", "sniff_run", "write_run", "Evaluation", "evaluate",
    "recall_curve",
]
