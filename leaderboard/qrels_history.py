"""A split's judgments over time, for the dataset page: versions, what each added, how the ranking moved.

For each version after the first: the judgments added and regraded (from the
stored qrels texts), Kendall's τ (tau-b) between the leaderboards of the two
versions over the entries scored on both, and the entries whose rank moved
most. Only what the leaderboard shows is used: public (or anonymous) entries
and baselines, ranked by the primary measure; no per-query value enters.

A hidden split shows the counts only, banded (the budget's ``version_deltas`` and ``judgment_counts``,
:mod:`submissions.disclosure`): a version that adds one judgment moves exactly
the entries whose runs hold the new document, so the entries that moved, and
τ, told any visitor which public runs retrieve it (docs/security.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from scipy.stats import kendalltau

from catalogue.models import QrelsVersion, Split
from submissions import disclosure
from submissions.models import Result, Submission, on_board_q

#: How many of the entries that moved most to name per version.
MOVED_SHOWN = 3


@dataclass
class VersionRow:
    version: QrelsVersion
    added: int | None = None  # judgments whose (query, document) the previous version did not have
    regraded: int | None = None  # judgments whose grade changed
    common: int = 0  # entries ranked on both versions
    tau: float | None = None
    moved: list[dict] = field(default_factory=list)
    # The counts as the page shows them (``disclosure.count_shown``: banded on a hidden split).
    judgments_shown: str = ""
    added_shown: str = "–"
    regraded_shown: str = "–"


def _pairs(version: QrelsVersion) -> dict[tuple[str, str], str]:
    out: dict[tuple[str, str], str] = {}
    for line in version.text().splitlines():
        parts = line.split()
        if len(parts) == 4:
            out[(parts[0], parts[2])] = parts[3]
    return out


def _board(split: Split, version_id: int) -> dict[int, tuple[float, str]]:
    """submission id → (primary score, name) of the entries a leaderboard of this version would show."""
    results = Result.objects.filter(on_board_q("submission__"), qrels_version_id=version_id,
                                    submission__split_id=split.pk, primary_score__isnull=False)
    out: dict[int, tuple[float, str]] = {}
    for sid, score, name, visibility in results.values_list("submission_id", "primary_score",
                                                            "submission__system_name", "submission__visibility"):
        assert score is not None  # primary_score__isnull=False above
        out[sid] = (score, "an anonymous entry" if visibility == Submission.Visibility.ANONYMOUS else name)
    return out


def _ranks(scores: dict[int, float]) -> dict[int, int]:
    """1 = best; equal scores share the better rank."""
    return {sid: 1 + sum(1 for other in scores.values() if other > s) for sid, s in scores.items()}


def qrels_history(*, split: Split) -> list[VersionRow]:
    """The split's versions, newest first, each compared with the one before it (counts only on a hidden split)."""
    versions = list(QrelsVersion.objects.filter(split=split).defer("qrels_gz").order_by("version"))
    deltas = disclosure.shows(split, "version_deltas")  # τ and moves: public splits only
    rows = []
    # The previous version's judgments and board (None before the first version).
    previous_pairs: dict[tuple[str, str], str] | None = None
    previous_board: dict[int, tuple[float, str]] | None = None
    for v in versions:
        v = QrelsVersion.objects.get(pk=v.pk)  # with its text, one at a time
        pairs = _pairs(v)
        board = _board(split, v.pk) if deltas else {}
        row = VersionRow(version=v)
        if previous_pairs is not None and previous_board is not None:
            row.added = sum(1 for p in pairs if p not in previous_pairs)
            row.regraded = sum(1 for p, g in pairs.items() if p in previous_pairs and previous_pairs[p] != g)
            common = sorted(set(board) & set(previous_board))
            row.common = len(common)
            if len(common) >= 2:
                tau = kendalltau([previous_board[s][0] for s in common], [board[s][0] for s in common]).statistic
                row.tau = None if tau != tau else round(float(tau), 3)  # nan: every score equal
                before = _ranks({s: previous_board[s][0] for s in common})
                after = _ranks({s: board[s][0] for s in common})
                moves = sorted(common, key=lambda s: (-abs(after[s] - before[s]), after[s]))
                row.moved = [{"name": board[s][1], "before": before[s], "after": after[s]}
                             for s in moves[:MOVED_SHOWN] if after[s] != before[s]]
        row.judgments_shown = disclosure.count_shown(v.n_judgments, split=split)
        row.added_shown = disclosure.count_shown(row.added, split=split)
        row.regraded_shown = disclosure.count_shown(row.regraded, split=split)
        rows.append(row)
        previous_pairs, previous_board = pairs, board
    return rows[::-1]
