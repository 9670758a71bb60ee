"""The two conventions on which trec_eval versions and settings disagree, as named choices.

* **Score precision.** trec_eval up to 9.x (and pytrec_eval, which wraps 9.0.8)
  stores a run's scores as C ``float``: two scores equal in single precision
  (29.958970 and 29.958969) are a tie, broken by docid. trec_eval 10 stores
  them as ``double``, where the same two scores are ordered by value.
  ``"float32"`` (the default) reproduces 9.x, ``"float64"`` reproduces 10.
* **Averaged queries** (``empty_queries``). Which queries every mean is over:

  - ``"omit"`` (the default): the qrels queries with at least one relevant
    document; a query without one is left out, a query the run lacks scores 0;
  - ``"count"``: every qrels query, as ``trec_eval -c`` averages; a query
    without a relevant document scores 0 on every measure that needs one;
  - ``"trec_eval"``: the qrels queries the run has rows for, relevant
    document or not, as plain ``trec_eval`` (without ``-c``) averages; a query
    the run lacks is not averaged, so the run chooses its own denominator: fit
    to reproduce a paper's trec_eval numbers, never for a leaderboard (the
    site's datasets offer ``omit`` and ``count`` only).

  trec_eval 9.0.8 and 10 stop on a query whose judgments are all negative
  (``bpref``: nothing to count); the core scores such a query like any
  query without a relevant document.

A dataset states both, so its numbers match the tool its paper used.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Literal

    ScorePrecision = Literal["float32", "float64"]
    EmptyQueries = Literal["omit", "count", "trec_eval"]
else:  # at run time they only appear in annotations: not importing typing saves the command line's start ~6 ms
    ScorePrecision = EmptyQueries = str

SCORE_PRECISIONS: tuple[ScorePrecision, ...] = ("float32", "float64")
EMPTY_QUERIES: tuple[EmptyQueries, ...] = ("omit", "count", "trec_eval")

DEFAULT_SCORE_PRECISION: ScorePrecision = "float32"
#: The measures a run is scored on when none are named (``measures.DEFAULT_MEASURES``, the command line's default).
DEFAULT_MEASURE_NAMES = ("R@10,R@100,R@1000,P@10,P@100,MAP@10,MAP@100,MAP@1000,MRR@10,MRR@100,MRR@1000,"
                         "nDCG@10,nDCG@100,nDCG@1000,RP,Success@10")
#: The command line's exit statuses beside 0: invalid input, and the two implementations disagreeing (--verify).
EXIT_INVALID = 2
EXIT_DISAGREE = 3
DEFAULT_EMPTY_QUERIES: EmptyQueries = "omit"
#: The kinds of classification task (``evaluation.classification``) and the suite aggregates
#: (``evaluation.aggregate``), here so that the command line declares its choices without loading either.
CLASSIFICATION_TASKS = ("single", "multi", "ner")
AGGREGATE_METHODS = ("mean", "harmonic", "mean-rank", "lextreme")


_MEASURE_NAME = re.compile(r"^(?P<family>[A-Za-z]+'?)(?:@(?P<k>\d+))?$")


def split_measure_name(name: str) -> tuple[str, str | None] | None:
    """``"R@100"`` → ``("R", "100")``, ``"RP"`` → ``("RP", None)``; None when it is not a measure name's shape.

    The grammar of every measure name (``measures.parse_measure`` checks the family and the cutoff); the
    prime of the papers (nDCG′) is read as the apostrophe.
    """
    m = _MEASURE_NAME.match(name.strip().replace("\u2032", "'"))
    return (m.group("family"), m.group("k")) if m else None


_PRECISION_BY_NAME: dict[str, ScorePrecision] = {c: c for c in SCORE_PRECISIONS}
_EMPTY_BY_NAME: dict[str, EmptyQueries] = {c: c for c in EMPTY_QUERIES}


def score_precision(value: str) -> ScorePrecision:
    """Check a score precision name; ValueError naming the choices otherwise."""
    if value not in _PRECISION_BY_NAME:
        raise ValueError(f"unknown score precision {value!r}; choose float32 (trec_eval 9.x, pytrec_eval) "
                         "or float64 (trec_eval 10)")
    return _PRECISION_BY_NAME[value]


def empty_queries(value: str) -> EmptyQueries:
    """Check an empty-query convention name; ValueError naming the choices otherwise."""
    if value not in _EMPTY_BY_NAME:
        raise ValueError(f"unknown averaging convention {value!r}; choose omit (queries without a relevant "
                         "document are left out), count (every qrels query, as trec_eval -c) or trec_eval (the "
                         "qrels queries the run has, as plain trec_eval)")
    return _EMPTY_BY_NAME[value]
