"""The command line's fast path: plain runs scored by the compiled ``_fastscore``, without importing numpy.

At the leaderboard's own scale (BSARD: 222 topics × 1,000 rows) scoring takes a few milliseconds; what a
Python command costs there is starting up, and numpy's import alone took longer than trec_eval's whole run.
So ``python -m evaluation score`` first offers the files to ``_fastscore`` (C, built by ``make native``):
it takes the plain case (printable ASCII, CRLF or not, grouped by query, every qrels query in the run with a relevant
document, no more rows than the depth, one tag: the module's header lists every condition) and the usual
families, and computes the same doubles as ``evaluation.kernels`` and numpy's means. Anything else, or no
compiled module, returns None and the command takes the numpy path (``cli_score``), which says every
refusal and notice; the only notice the fast path gives is the tie one, in the same words.

No numpy here, on purpose: importing this module must stay cheap.
"""

from __future__ import annotations

from .conventions import ScorePrecision, split_measure_name
from .errors import Notice, ties_notice

try:
    from . import _fastscore as _native
except ImportError:  # not built (make native): the numpy path scores everything
    _native = None  # type: ignore[assignment]

#: The families the compiled scorer computes, with its codes for them.
FAMILY_CODES = {"R": 0, "P": 1, "MAP": 2, "MRR": 3, "nDCG": 4, "RP": 5, "Success": 6}
#: nDCG's discount is libm's log2 here and numpy's np.log2 in the kernel; they agree on every rank up to
#: 1,620 (numpy's AVX-512 log2 differs from libm's first at 1,621), so deeper nDCG cutoffs take the numpy path.
NDCG_MAX_K = 1000


class PlainScores:
    """What the fast path computed: evaluated queries (sorted), per-query values and means by measure name.

    A plain class, not a dataclass: ``dataclasses`` would add ~15 ms to the start this module exists to save.
    """

    def __init__(self, *, names: list[str], qids: list[str], per_query: dict[str, list[float]],
                 means: dict[str, float], warnings: list[Notice], n_lines: int) -> None:
        self.names = names
        self.qids = qids
        self.per_query = per_query
        self.means = means
        self.warnings = warnings
        self.n_lines = n_lines


def available() -> bool:
    """Whether the compiled scorer is built (``make native``)."""
    return _native is not None


def plain_measures(text: str) -> list[tuple[str, int, int]] | None:
    """``"R@100,RP"`` → ``[("R@100", code, 100), ("RP", code, 0)]``, duplicates dropped; None for anything the
    fast path does not compute (another family, a bad name: ``measures.parse_measures`` says what is wrong)."""
    out: list[tuple[str, int, int]] = []
    for name in text.split(","):
        if not name.strip():
            continue
        parts = split_measure_name(name)
        if parts is None or parts[0] not in FAMILY_CODES:
            return None
        family, k_text = parts
        if (family == "RP") != (k_text is None):
            return None
        k = int(k_text) if k_text is not None else 0
        if (k_text is not None and k < 1) or (family == "nDCG" and k > NDCG_MAX_K):
            return None
        label = f"{family}@{k}" if k_text is not None else family
        if all(label != seen for seen, _, _ in out):
            out.append((label, FAMILY_CODES[family], k))
    return out or None


def score_plain(*, run: str, qrels: str, measures: str, depth: int, threshold: int,
                score_precision: ScorePrecision) -> PlainScores | None:
    """Score the run file against the qrels file when both are the plain case; None otherwise (module docstring).

    The result equals ``evaluate(read_qrels(qrels, threshold=threshold), read_run(run), measures, depth=depth,
    score_precision=score_precision)`` bit for bit, and whichever averaging convention is asked (in the plain
    case every qrels query has a relevant document and is in the run, so they all average the same queries).
    """
    if _native is None or depth < 1:
        return None
    wanted = plain_measures(measures)
    if wanted is None:
        return None
    try:
        found = _native.score(run, qrels, [(code, k) for _, code, k in wanted], depth, threshold,
                              score_precision == "float32")
    except (UnicodeEncodeError, ValueError):  # a path the C library cannot take (e.g. a NUL byte)
        return None
    if found is None:
        return None
    qids, columns, means, tie_groups, tie_queries, n_lines = found
    names = [name for name, _, _ in wanted]
    warnings = [ties_notice(tie_groups, tie_queries)] if tie_groups else []
    return PlainScores(names=names, qids=qids, per_query=dict(zip(names, columns, strict=True)),
                       means=dict(zip(names, means, strict=True)), warnings=warnings, n_lines=n_lines)


__all__ = ["FAMILY_CODES", "NDCG_MAX_K", "PlainScores", "available", "plain_measures", "score_plain"]
