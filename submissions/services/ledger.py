"""The release ledger of hidden splits and the daily budget of first releases (docs/security.md, "The ledger").

Called by :func:`submissions.services.ladder.ladder_judge`, the one place a
result is released, inside its transaction (after the split's row lock):

* :func:`release_hold` — before a release: a participant's (or team's)
  **first** release on a split counts against the split's daily budget of
  first releases (``ReleasePolicy.first_releases_per_day``,
  ``LEXBOARD_FIRST_RELEASE_BUDGET``); past it the run waits, visibly, for the
  next day's budget (the periodic sweep) or a curator (both through
  ``ladder.release_waits_judge``). An identity then costs a day of
  waiting, not just a mailbox.
* :func:`release_record` — for every release: the ledger's row (identity,
  day, measures, an upper bound on the bits released), the alerts when the
  identity or the split passes its daily rate of bits (a mark in the admin
  and an e-mail to every curator, through the notification path), and, after
  the commit, the run's shape checked for the crafted probes of the lattice
  attack (:func:`crafted_reasons`).
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Mapping
from datetime import date, datetime, timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Count, Q, Sum
from django.urls import reverse
from django.utils import timezone

from campaigns.notifications import absolute, notify
from catalogue.models import Corpus, Dataset, Split
from evaluation.noisy_margin import Margin, verdict_bits
from evaluation.pooling import ranked_docids
from lexboard.text import count

from .. import disclosure
from ..models import (
    WAITING_FOR_BUDGET,
    LedgerAlert,
    Release,
    ReleasePolicy,
    ReleaseWait,
    Result,
    Submission,
    Verdict,
)
from .results import read_stored_run

logger = logging.getLogger(__name__)

#: Words shorter than this are not compared (articles, prepositions: any document shares them with any question).
MIN_WORD = 5
#: How deep a run's ranking is read for its shape.
SHAPE_DEPTH = 100


# --- who, and how much ------------------------------------------------------------------------------


def identity_of(submission: Submission) -> str:
    """The identity a release counts for: the team in a shared task, else the account (``team:7``, ``user:3``)."""
    if submission.entrant_team_id is not None:
        return f"team:{submission.entrant_team_id}"
    return f"user:{submission.user_id}"


def identity_label(submission: Submission) -> str:
    """The identity as curators read it: ``team Red`` or the account's username (never "anonymous")."""
    if submission.entrant_team_id is not None and submission.entrant_team is not None:
        return f"team {submission.entrant_team.name}"
    return f"{submission.user.get_username()} (user {submission.user_id})"


def release_bits(*, split: Split, n_topics: int, step: float | None = None) -> float:
    """An upper bound on what one release of ``split`` tells: log2 of the values each released measure can take.

    A released value sits on ``step`` (the result's stored grid step; by default ``disclosure.step_for(n_topics)``);
    a measure with range R has R / step + 1 values on it. Summed over the released measures.
    """
    step = step or disclosure.step_for(n_topics)
    values = round(disclosure.MEASURE_RANGE / step) + 1
    return len(disclosure.released_measures(split)) * math.log2(values)


def policy(split: Split) -> tuple[float, float, int]:
    """(identity bits a day, split bits a day, first releases a day) of ``split``: its own, else the settings."""
    row = ReleasePolicy.objects.filter(split=split).first()

    def pick(value, setting: str):
        return value if value is not None else getattr(settings, setting)
    return (float(pick(row and row.identity_bits_per_day, "LEXBOARD_LEDGER_IDENTITY_BITS")),
            float(pick(row and row.split_bits_per_day, "LEXBOARD_LEDGER_SPLIT_BITS")),
            int(pick(row and row.first_releases_per_day, "LEXBOARD_FIRST_RELEASE_BUDGET")))


def _today(now: datetime | None = None) -> date:
    return timezone.localdate(now or timezone.now())


# --- the daily budget of first releases -------------------------------------------------------------


def waiting_message(split: Split, budget: int) -> str:
    """What the owner of a run held by the budget reads (the submission page, status.json, the API)."""
    return (f"{WAITING_FOR_BUDGET}: {split} releases the first runs of at most {budget} new "
            "participants or teams a day, and today's are taken. The run is released with the next day's budget, "
            "or by a curator before, if it is still an improvement over your best.")


def release_hold(*, result: Result, submission: Submission, split: Split, curator: bool = False) -> str | None:
    """Hold a release the Ladder admitted when it is its identity's first and today's budget is spent.

    Returns the owner's message when held (the caller stores the result as not released), None to release.
    ``curator``: a curator releases it now, outside the budget.
    """
    identity = identity_of(submission)
    if curator or not disclosure.hidden(split) or submission.is_baseline:
        ReleaseWait.objects.filter(result=result).delete()
        return None
    budget = policy(split)[2]
    if budget <= 0 or Release.objects.filter(split=split, identity=identity).exists():
        ReleaseWait.objects.filter(result=result).delete()
        return None
    if Release.objects.filter(split=split, first=True, day=_today()).count() < budget:
        ReleaseWait.objects.filter(result=result).delete()
        return None
    ReleaseWait.objects.get_or_create(result=result, defaults={"split": split, "identity": identity})
    return waiting_message(split, budget)


def waits_due(*, now: datetime | None = None) -> list[int]:
    """The waiting runs to judge again now, oldest first per split (the sweep).

    A run of an identity released on the split meanwhile is due at once (it is no first release any more); the
    others as far as today's budget leaves room for new identities (an identity's runs go together: after its
    first one is released, the next ones are not first).
    """
    due: list[int] = []
    today = _today(now)
    for split in Split.objects.filter(release_waits__isnull=False).distinct():
        budget = policy(split)[2]
        left = budget - Release.objects.filter(split=split, first=True, day=today).count() if budget > 0 else None
        known = set(Release.objects.filter(split=split).values_list("identity", flat=True).distinct())
        for wait_id, identity in ReleaseWait.objects.filter(split=split).order_by("since", "pk").values_list(
                "pk", "identity"):
            if left is not None and identity not in known:
                if left <= 0:
                    continue
                left -= 1
                known.add(identity)
            due.append(wait_id)
    return due


# --- the ledger -------------------------------------------------------------------------------------


def release_record(*, result: Result, submission: Submission, split: Split) -> Release | None:
    """Write the ledger's row of a release of ``result`` on a hidden split (idempotent) and raise the alerts."""
    if not disclosure.hidden(split) or submission.is_baseline:
        return None
    identity = identity_of(submission)
    now = timezone.now()
    first = not Release.objects.filter(split=split, identity=identity).exists()
    row, created = Release.objects.get_or_create(result=result, defaults={
        "split": split, "submission": submission, "identity": identity, "identity_label": identity_label(submission),
        "released_at": now, "day": _today(now), "first": first, "measures": disclosure.released_measures(split),
        "bits": release_bits(split=split, n_topics=result.n_queries or 0, step=result.released_step)})
    if created:
        _alerts(split=split, row=row)
        if split.dataset.task == Dataset.Task.RETRIEVAL:
            release_id = row.pk
            transaction.on_commit(lambda: release_check_shape(release_id=release_id))
    return row


#: What one answer of the Ladder can tell beyond the runs: an exact yes or no is at most one bit (a verdict with the
#: noisy margin counts ``verdict_bits`` of its epsilon instead); a near-copy's "no verdict" is decided by the runs.
VERDICT_BITS = {Verdict.Outcome.RELEASED: 1.0, Verdict.Outcome.NOT_RELEASED: 1.0, Verdict.Outcome.NEAR_COPY: 0.0}


def verdict_record(*, result: Result, submission: Submission, split: Split, outcome: str,
                   margin: Margin | None = None) -> Verdict | None:
    """Write the ledger's row of the Ladder's answer to ``result`` on a hidden split (the latest answer when it
    is judged again on new judgments): every judged upload is counted, released or not. ``margin``: the noisy
    margin's pass that decided it (``evaluation.noisy_margin``), whose epsilon bounds the verdict's bits."""
    if not disclosure.hidden(split) or submission.is_baseline:
        return None
    now = timezone.now()
    bits = VERDICT_BITS[Verdict.Outcome(outcome)]
    noisy: dict[str, str | float | None] = {"mechanism": "", "epsilon": None, "net": None, "noise": None,
                                            "margin": None}
    if margin is not None and outcome != Verdict.Outcome.NEAR_COPY:
        bits = verdict_bits(margin.epsilon)
        noisy = {"mechanism": margin.mechanism, "epsilon": margin.epsilon, "net": margin.net, "noise": margin.noise,
                 "margin": margin.margin}
    row, _ = Verdict.objects.update_or_create(result=result, defaults={
        "split": split, "submission": submission, "identity": identity_of(submission),
        "identity_label": identity_label(submission), "answered_at": now, "day": _today(now), "outcome": outcome,
        "bits": bits, **noisy})
    _alerts(split=split, row=row)  # the daily rates count verdicts' bits beside releases'
    return row


def reveal_record(*, split: Split, submission: Submission, n_topics: int, step: float) -> Release | None:
    """The ledger's row of one team's value on a shared task's private board (kind ``reveal``; idempotent).

    The value is the private part's mean of the team's run, on the grid of ``step`` (the private part's
    ``n_topics``): what the reveal releases beside the Ladder's releases. It is never an identity's first release
    (the budget of first releases is for new identities' runs), and it counts in the daily alerts.
    """
    if not disclosure.hidden(split):
        return None
    now = timezone.now()
    row, created = Release.objects.get_or_create(
        split=split, submission=submission, kind=Release.Kind.REVEAL, defaults={
            "result": None, "identity": identity_of(submission), "identity_label": identity_label(submission),
            "released_at": now, "day": _today(now), "first": False,
            "measures": disclosure.released_measures(split),
            "bits": release_bits(split=split, n_topics=n_topics, step=step)})
    if created:
        _alerts(split=split, row=row)
    return row


def _day_bits(*, split: Split, day: date, identity: str) -> tuple[float, float]:
    """The bits a split's ledger counts on ``day``, its releases' and its verdicts': (``identity``'s, everyone's).
    One query a table, each summing both (the four sums were four queries of every judged upload)."""
    mine = Sum("bits", filter=Q(identity=identity))
    released = Release.objects.filter(split=split, day=day).aggregate(mine=mine, all=Sum("bits"))
    judged = Verdict.objects.filter(split=split, day=day).aggregate(mine=mine, all=Sum("bits"))
    return (float(released["mine"] or 0.0) + float(judged["mine"] or 0.0),
            float(released["all"] or 0.0) + float(judged["all"] or 0.0))


def _alerts(*, split: Split, row: Release | Verdict) -> None:
    identity_limit, split_limit, _ = policy(split)
    mine, total = _day_bits(split=split, day=row.day, identity=row.identity)
    if mine > identity_limit:
        _alert(split=split, scope=LedgerAlert.Scope.IDENTITY, row=row, bits=mine, limit=identity_limit)
    if total > split_limit:
        _alert(split=split, scope=LedgerAlert.Scope.SPLIT, row=row, bits=total, limit=split_limit)


def _alert(*, split: Split, scope: str, row: Release | Verdict, bits: float, limit: float) -> None:
    identity = row.identity if scope == LedgerAlert.Scope.IDENTITY else ""
    alert, created = LedgerAlert.objects.get_or_create(
        split=split, scope=scope, identity=identity, day=row.day,
        defaults={"identity_label": row.identity_label if identity else "", "bits": bits, "limit": limit})
    if not created:
        LedgerAlert.objects.filter(pk=alert.pk).update(bits=bits)
        return
    who = f"{row.identity_label}" if identity else f"the split {split}"
    context = {"split": str(split), "who": who, "bits": f"{bits:.1f}", "limit": f"{limit:g}", "day": str(row.day),
               "url": absolute(reverse("participants:ledger", args=[split.pk]))}
    curators = get_user_model().objects.filter(is_staff=True, is_active=True).exclude(email="")
    for curator in curators:
        notify(key=f"ledger:{alert.pk}:{curator.pk}", kind="ledger_alert", context=context, user=curator)
    logger.warning("release ledger: %s passed %s bits on %s (%.1f)", who, limit, row.day, bits)


# --- crafted shapes ---------------------------------------------------------------------------------


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"\w+", text.lower()) if len(w) >= MIN_WORD and not w.isdigit()}


def crafted_reasons(*, ranking: Mapping[str, list[str]], topics: Mapping[str, str],
                    texts: Mapping[str, str]) -> list[str]:
    """Why a run looks like the lattice attack's probes, for a curator's review ([] when it does not).

    * most topics hold one or two documents (the anchors: each topic's value
      then sits on a known lattice);
    * a topic ranks documents that share no word of five letters or more with
      its question ahead of a single last document (fillers before a probe).
      Only documents whose text the dataset stores are compared.
    """
    reasons = []
    short = sorted(q for q, docs in ranking.items() if len(docs) <= 2)
    if ranking and len(short) > len(ranking) / 2:
        reasons.append(f"{len(short)} of {len(ranking)} topics hold one or two documents")
    probes = []
    for qid, docs in ranking.items():
        question = _words(topics.get(qid, ""))
        ahead = docs[:-1]
        if not question or not ahead or any(d not in texts for d in ahead):
            continue
        if not any(_words(texts[d]) & question for d in ahead):
            probes.append(qid)
    if probes:
        shown = ", ".join(sorted(probes)[:8]) + (", …" if len(probes) > 8 else "")
        reasons.append(f"{count(len(probes), 'topic')} put{'s' if len(probes) == 1 else ''} documents sharing no "
                       f"word with the question ahead of a single document ({shown})")
    return reasons


def release_check_shape(*, release_id: int) -> list[str]:
    """Read a released run's shape (after the commit, outside the split's lock) and store the reasons found."""
    row = Release.objects.select_related("submission__split__dataset").filter(pk=release_id).first()
    if row is None or row.submission is None:
        return []
    try:
        run = read_stored_run(row.submission)
    except Exception:  # the file is gone or unreadable: nothing to check, the release stands
        logger.warning("release ledger: could not read the run of %s for its shape", row, exc_info=True)
        return []
    ranking = ranked_docids(run, SHAPE_DEPTH)
    split = row.submission.split
    topics = dict(split.topics.values_list("qid", "text"))
    wanted = {d for docs in ranking.values() if len(docs) <= SHAPE_DEPTH for d in docs[:-1]}
    corpus = Corpus.objects.filter(dataset_id=split.dataset_id).first()
    texts = {d: f"{title} {text}" for d, (title, text) in (corpus.texts(wanted) if corpus else {}).items()}
    reasons = crafted_reasons(ranking=ranking, topics=topics, texts=texts)
    if reasons:
        Release.objects.filter(pk=release_id).update(crafted=reasons)
        logger.warning("release ledger: %s flagged for review: %s", row, "; ".join(reasons))
    return reasons


# --- what curators read -----------------------------------------------------------------------------


def ledger_summary(*, split: Split, days: int = 14) -> dict:
    """The ledger page's tables: per identity and per day, bits summed, alerts, waits and flagged runs."""
    releases = Release.objects.filter(split=split)
    verdicts = Verdict.objects.filter(split=split)
    since = _today() - timedelta(days=days - 1)
    return {
        "total_releases": releases.count(),
        "total_bits": releases.aggregate(b=Sum("bits"))["b"] or 0.0,
        "per_identity": list(releases.values("identity", "identity_label")
                             .annotate(releases=Count("pk"), bits=Sum("bits")).order_by("-bits", "identity")),
        "per_day": list(releases.filter(day__gte=since).values("day")
                        .annotate(releases=Count("pk"), first=Count("pk", filter=Q(first=True)), bits=Sum("bits"),
                                  identities=Count("identity", distinct=True)).order_by("-day")),
        "per_identity_day": list(releases.filter(day__gte=since).values("day", "identity_label")
                                 .annotate(releases=Count("pk"), bits=Sum("bits")).order_by("-day", "-bits")),
        "verdicts": verdicts.count(),
        "verdict_bits": verdicts.aggregate(b=Sum("bits"))["b"] or 0.0,
        "verdicts_per_identity": list(verdicts.values("identity", "identity_label").annotate(
            answers=Count("pk"), released=Count("pk", filter=Q(outcome=Verdict.Outcome.RELEASED)),
            not_released=Count("pk", filter=Q(outcome=Verdict.Outcome.NOT_RELEASED)),
            near_copies=Count("pk", filter=Q(outcome=Verdict.Outcome.NEAR_COPY)), bits=Sum("bits"),
        ).order_by("-bits", "identity")),
        "alerts": list(LedgerAlert.objects.filter(split=split)[:50]),
        "flagged": list(releases.exclude(crafted=[]).select_related("submission")[:50]),
        "waits": list(ReleaseWait.objects.filter(split=split).select_related("result__submission")),
        "policy": policy(split),
    }
