"""The reveal of a shared task: the private board, computed and published once, as a dated snapshot.

At the close (the ``leaderboard.reveal_closed_phases`` beat task, or a curator
from the admin), :func:`phase_reveal` in one transaction:

1. ranks each team by its best final run (``submissions.services.finals``: the runs it marked final, at most
   five, else its latest runs the Ladder released) on the **private** topics (the ``private`` :class:`~submissions.models.ResultPart`
   of the current qrels), with the living board's significance markers and
   tiers (:func:`leaderboard.significance.compute_significance`) on the private
   per-query values;
2. stores it as a :class:`~campaigns.models.PrivateBoard` whose rows hold
   every shown value (on a hidden split the primary measure only, on the private part's grid), so later qrels
   versions never change it, and writes one ledger entry per team row (kind ``reveal``);
3. marks the phase revealed and puts the full-topic values back into the
   split's results (``submissions.services.partition.split_unpartition``):
   the living board goes on on all topics, with the runs sent after the task
   (a run of the task is not released on all topics: with its public-part
   value it would give its private-part mean; ``services.ladder._shown_twice``);
4. records a "private board published" e-mail for every member (sent after
   the commit).

It is idempotent: the phase row is locked and a revealed phase returns its
board unchanged. It waits while a run sent before the close is still being
scored (a curator may force it; such a run is then left out and named).
"""

from __future__ import annotations

import datetime as dt
import io
import logging
from dataclasses import dataclass

import numpy as np
from django.core.cache import cache
from django.db import transaction
from django.utils import timezone

from campaigns.models import Membership, Phase, PrivateBoard
from campaigns.notifications import absolute, notify
from catalogue.models import Split, Topic
from catalogue.page_generation import CacheKind, cache_key
from catalogue.signals import board_changing
from evaluation.ladder import round_score
from submissions import disclosure
from submissions.models import Result, ResultPart, Submission
from submissions.services.finals import team_final_runs, team_task_runs
from submissions.services.ledger import reveal_record
from submissions.services.partition import parts_of
from submissions.services.unpartition import split_unpartition

from .selectors import LeaderboardRow, rank_rows
from .significance import compute_significance

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class RevealOutcome:
    board: PrivateBoard | None
    created: bool
    message: str


@dataclass(frozen=True)
class PrivatePart:
    """A run's scores on the private topics (a stored ResultPart, or cut from an all-topic Result)."""

    scores: dict
    primary_score: float | None
    per_query: bytes
    n_queries: int = 0  # the private topics evaluated: the N of the grid its scores are shown on


def _private_part(submission_ids: list[int], version_id: int, *, phase: Phase) -> dict[int, PrivatePart]:
    """The private part of each run on ``version_id``: stored while the phase ran, else (judgments published
    after the reveal, whose Results hold all topics) cut from the Result by the phase's partition."""
    out = {p.submission_id: PrivatePart(p.scores, p.primary_score, bytes(p.per_query), p.n_queries) for p in ResultPart.objects.filter(
        submission_id__in=submission_ids, qrels_version_id=version_id, part=ResultPart.Part.PRIVATE)}
    if phase.revealed_at is None:
        return out
    primary = phase.split.dataset.primary_measure
    for result in Result.objects.filter(submission_id__in=set(submission_ids) - set(out), qrels_version_id=version_id
                                        ).exclude(scores={}).exclude(per_query=b""):
        scores, primary_score, n, blob = parts_of(per_query=bytes(result.per_query), scores=result.scores,
                                                  primary_measure=primary, public=frozenset(phase.public_qids))["private"]
        out[result.submission_id] = PrivatePart(scores, primary_score, blob, n)
    return out


def _per_query(blob: bytes) -> dict[str, np.ndarray]:
    """A part's per-query arrays (the layout of ``submissions.selectors.load_per_query``)."""
    if not blob:
        return {}
    with np.load(io.BytesIO(blob), allow_pickle=False) as data:
        return {name: data[name] for name in data.files}


def private_board_rows(*, phase: Phase, version_id: int | None = None) -> tuple[list[dict], str, int, list[str]]:
    """(rows, significance method, number of private queries, notes) of the private board on ``version_id``
    (default: the split's current qrels), computed now."""
    split = Split.objects.select_related("dataset", "current_qrels").get(pk=phase.split_id)
    dataset = split.dataset
    measure = dataset.primary_measure
    version_id = version_id or split.current_qrels_id
    notes: list[str] = []
    if version_id is None:
        return [], "", 0, ["no published judgments"]
    candidates: list[tuple[LeaderboardRow, np.ndarray | None]] = []
    shown_measures = set(disclosure.released_measures(split))
    for team in phase.teams.order_by("name"):
        finals, marked = team_final_runs(team=team, phase=phase)
        parts = _private_part([s.pk for s in finals], version_id, phase=phase)
        scored = [(s, parts[s.pk]) for s in finals if s.pk in parts]
        if not scored:
            if team_task_runs(team=team, phase=phase).exists():
                notes.append(f"{team.name}: no scored final run")
            continue
        # The team's best final run by its value as the board shows it (the grid of the private part's own N), the
        # oldest among equals: picked at full precision, the run named would say which of two finals tied on the
        # grid did better on the private topics, a finer number than the board releases (#24).
        best, part = max(scored, key=lambda sp: (
            -1.0 if sp[1].primary_score is None else disclosure.released_value(sp[1].primary_score, split=split,
                                                                                n_topics=sp[1].n_queries),
            -sp[0].pk))
        # The board ranks teams; a private or anonymous run is named as such (its page is its owner's).
        shown = best.visibility == Submission.Visibility.PUBLIC and not best.hidden_by_curator
        row = LeaderboardRow(
            rank=None, kind="scored", submission_id=best.pk,
            system=best.system_name if shown else f"({best.get_visibility_display().split(',')[-1].strip()} run)",
            owner=f"team {team.name}", family=best.get_family_display(),
            paper_url=best.paper_url if shown else "", code_url=best.code_url if shown else "",
            date=best.created_at.date(),
            # A hidden split's board shows the primary measure only (``disclosure.released_measures``): a second
            # mean over the same private topics is a second equation on their per-query values (#37).
            scores={m: (float(v) if v is not None else None) for m, v in part.scores.items()
                    if m in shown_measures},  # on the grid: below
            team=team.name, family_key=best.family, params=best.params if shown else "",
            participant=f"team:{team.pk}", extra={"final_runs": len(finals), "marked": marked, "public": shown},
        )
        data = _per_query(part.per_query)
        vector = None
        if "qids" in data and measure in data:
            order = np.argsort(data["qids"].astype(str))
            vector = np.asarray(data[measure], dtype=np.float64)[order]
        candidates.append((row, vector))
    small = min((len(v) for _, v in candidates if v is not None), default=None)
    if small is not None and small < disclosure.HIDDEN_GROUP_FLOOR:
        # A mean over fewer topics is close to one topic's value, and this board has no Ladder: shown per team,
        # it would tell whether the documents a team put first are relevant (docs/security.md).
        notes.append(f"the private part has fewer than {disclosure.HIDDEN_GROUP_FLOOR} evaluated topics: "
                     "no scores are shown")
        return [], "", small, notes
    step = disclosure.grid_step(split, n_topics=small) if small is not None else None
    rows = rank_on_grid([r for r, _ in candidates], measure=measure, step=step)
    for row in rows:
        row.extra.update(grid=step, n_private=small)  # what the reveal's ledger entries and the exports state
    vectors = {r.submission_id: v for r, v in candidates}
    entries: list[tuple[int, bool, np.ndarray]] = []
    for r in rows:
        vector = vectors.get(r.submission_id)
        if r.rank is not None and r.submission_id is not None and vector is not None:
            entries.append((r.submission_id, False, vector))
    method, n_queries = "", 0
    if len(entries) >= 2 and len({len(e[2]) for e in entries}) == 1:
        sig = compute_significance(entries=entries, measure=measure)
        # An exact test names 2^n, the private part's evaluated topics: a fact of the hidden qrels (below).
        method = sig.method.replace(sig.flips, "exact: every sign flip") if sig.exact else sig.method
        n_queries = sig.n_queries
        for row in rows:
            cell = sig.for_row(row.submission_id)
            if cell is not None:
                leader = cell["leader"]
                row.extra.update(tier=cell["tier"], leader_symbol=leader.symbol if leader else "",
                                 leader_text=leader.text if leader else "leader")
    elif entries:
        n_queries = len(entries[0][2])
    out = []
    for row in rows:
        data = row.to_dict()
        data.pop("is_private", None)
        out.append(data)
    return out, method, n_queries, notes


def private_topics(phase: Phase) -> int:
    """How many published topics the draw left private: what the board says it ranks on.

    Not the private part's evaluated topics (those with a relevant document): that count is a fact of the
    hidden qrels, and beside the public part's it says how many private topics have none.
    """
    public = set(phase.public_qids or [])
    return sum(1 for qid in Topic.objects.filter(split_id=phase.split_id).values_list("qid", flat=True)
               if qid not in public)


def rank_on_grid(rows: list[LeaderboardRow], *, measure: str, step: float | None) -> list[LeaderboardRow]:
    """The rows shown on the grid of ``step``, ordered by those shown values; ties share a rank.

    Entries that tie at the grid are listed by the date of their best run, then by team name, never by their
    full-precision means: that order would say which of two tied teams did better on the private topics, a
    finer number than the grid releases (docs/security.md). ``step`` None (no grid): the values rounded to
    the display precision.
    """
    for row in rows:
        row.scores = {m: (None if v is None else disclosure.on_grid(v, step) if step is not None else round_score(v))
                      for m, v in row.scores.items()}
    # rank_rows sorts stably by the shown value: equal values keep this order.
    return rank_rows(sorted(rows, key=lambda r: (r.date or dt.date.max, r.team or "")), measure=measure)


def _unfinished(phase: Phase) -> int:
    return Submission.objects.filter(split_id=phase.split_id, entrant_team__isnull=False, after_task=False,
                                     created_at__lt=phase.closes_at, withdrawn_at__isnull=True,
                                     status__in=[Submission.Status.QUEUED, Submission.Status.SCORING]).count()


def phase_reveal(*, phase_id: int, force: bool = False, now=None) -> RevealOutcome:
    """Publish the phase's private board once (idempotent); see the module docstring."""
    now = now or timezone.now()
    with transaction.atomic():
        phase = Phase.objects.select_for_update().select_related("split").get(pk=phase_id)
        existing = PrivateBoard.objects.filter(phase=phase).first()
        if phase.revealed_at is not None or existing is not None:
            return RevealOutcome(existing, False, "The private board was published before; nothing changed.")
        if now < phase.closes_at:
            return RevealOutcome(None, False, f"The phase closes at {phase.when(phase.closes_at)}: no reveal before.")
        waiting = _unfinished(phase)
        if waiting and not force:
            return RevealOutcome(None, False, f"{waiting} run(s) sent before the close are still being scored; "
                                              "the reveal waits for them (or force it from the admin).")
        current = phase.split.current_qrels
        if current is None:
            return RevealOutcome(None, False, "The split has no published judgments: nothing to rank.")
        if refusal := Phase.task_refusal(phase.split):
            # A phase made before the rule, or a dataset whose task changed since: no empty board is published.
            return RevealOutcome(None, False, f"No private board: {refusal}")
        rows, method, n_queries, notes = private_board_rows(phase=phase)
        if waiting:
            notes.append(f"{waiting} run(s) still being scored at the reveal were left out")
        if notes:
            method = (method + " " if method else "") + "Notes: " + "; ".join(notes) + "."
        board = PrivateBoard.objects.create(
            phase=phase, published_at=now, qrels_version=current.version,
            measure=phase.split.dataset.primary_measure, measures=disclosure.released_measures(phase.split),
            n_queries=private_topics(phase), rows=rows, method=method)
        reveal_ledger(phase=phase, rows=rows)
        # The living board as it stood during the phase (public part), kept before it goes back to all topics.
        board_changing.send(sender=Phase, split=phase.split, reason="reveal",
                            note=f"The public board of the shared task \u201c{phase.title}\u201d at its reveal "
                                 "(entries of the task on the public part of the topics); the private board is "
                                 "on the task's page.")
        Phase.objects.filter(pk=phase.pk).update(revealed_at=now)
        split_unpartition(split=phase.split)
        url = absolute(phase.get_absolute_url())
        for membership in Membership.objects.filter(phase=phase).select_related("user", "team"):
            notify(key=f"board:{phase.pk}:{membership.user_id}", kind="board_published", user=membership.user,
                   context={"task": phase.title, "team": membership.team.name, "url": url})
    logger.info("private board of %s published: %s teams", phase, len(rows))
    return RevealOutcome(board, True, f"The private board of \u201c{phase.title}\u201d is published ({len(rows)} teams).")


def reveal_ledger(*, phase: Phase, rows: list[dict]) -> int:
    """Each value the private board releases, one ledger entry per team row (``ledger.reveal_record``, kind
    ``reveal``): the private part's mean of the row's run, on the private part's grid. Returns how many."""
    done = 0
    for row in rows:
        value = (row.get("scores") or {}).get(phase.split.dataset.primary_measure)
        submission_id = row.get("submission_id")
        submission = (Submission.objects.filter(pk=submission_id).select_related("entrant_team", "user").first()
                      if submission_id is not None else None)
        extra = row.get("extra") or {}
        if value is None or submission is None or not extra.get("grid"):
            continue
        reveal_record(split=phase.split, submission=submission, n_topics=int(extra.get("n_private") or 0),
                      step=float(extra["grid"]))
        done += 1
    return done


def reveal_closed_phases(*, now=None) -> list[str]:
    """Beat: reveal every phase that closed and is not revealed yet (each one idempotent)."""
    now = now or timezone.now()
    messages = []
    for phase_id in Phase.objects.filter(closes_at__lte=now, revealed_at__isnull=True).values_list("pk", flat=True):
        messages.append(phase_reveal(phase_id=phase_id, now=now).message)
    return messages


@dataclass(frozen=True)
class RescoredBoard:
    """The private board recomputed on judgments published after the reveal (the snapshot stays as published)."""

    qrels_version: int
    rows: list[dict]
    method: str
    n_queries: int
    #: A hidden split: no rescored value is shown (beside the snapshot's, each would be a before/after pair that
    #: tells what the new judgments changed for that run; the budget's ``version_deltas``).
    withheld: bool = False


def private_board_rescored(*, phase: Phase, board: PrivateBoard) -> RescoredBoard | None:
    """The same final runs ranked on the split's current qrels, when they are newer than the snapshot's.

    On a split that withholds version deltas (a hidden one), the newer version is named and no row is given:
    each rescored value beside the snapshot's is a before/after pair that tells what the new judgments changed.
    Cached per split cache version (a rescoring or a new result bumps it).
    """
    split = Split.objects.select_related("dataset", "current_qrels").get(pk=phase.split_id)
    current = split.current_qrels
    if current is None or current.version == board.qrels_version:
        return None
    if not disclosure.shows(split, "version_deltas"):
        return RescoredBoard(current.version, [], "", private_topics(phase), withheld=True)
    key = cache_key(CacheKind.PRIVATE_BOARD, phase.pk, split=split)
    cached = cache.get(key)
    if cached is None:
        rows, method, _, _ = private_board_rows(phase=phase, version_id=current.pk)
        cached = RescoredBoard(current.version, rows, method, private_topics(phase))
        cache.set(key, cached, 60 * 60)
    return cached

