"""Lexboard's metric core: parse runs and qrels, score them, compare and fuse runs.

The core modules import no Django, so the same code scores on the server, in a
worker and on a researcher's laptop (``python -m evaluation ...``).
"""

from . import _startup  # noqa: F401  (first: it may set an environment variable numpy reads at import)
from .corpus import CorpusIds
from .errors import InputError, Notice, Problem, QrelsFormatError, RunFormatError
from .measures import DEFAULT_MEASURES, Measure, parse_measure, parse_measures
from .qrels import Qrels, read_qrels
from .runs import Run, docid_scheme_ok, read_run, sniff_run, write_run
from .scoring import Evaluation, evaluate, recall_curve

__all__ = [
    "CorpusIds", "InputError", "Notice", "Problem", "QrelsFormatError", "RunFormatError",
    "DEFAULT_MEASURES", "Measure", "parse_measure", "parse_measures", "Qrels", "read_qrels",
    "Run", "docid_scheme_ok", "read_run", "sniff_run", "write_run", "Evaluation", "evaluate",
    "recall_curve",
]
