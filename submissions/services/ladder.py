"""The Ladder on the server: which stored results a hidden split releases (docs/security.md).

The decision itself is the metric core's :func:`evaluation.ladder.ladder_step`
(a one-sided paired sign-flip test at alpha 0.05 on the primary measure's
per-query values, and the displayed value must go up by one step). Here:

* :func:`ladder_judge` — called in the transaction that stores a result on
  the split's current qrels (after the split's row lock): the participant's
  best on that split and version (:class:`~submissions.models.LadderBest`)
  is locked with ``select_for_update``, the new result is compared with it,
  and the result is marked released (it becomes the best) or not (its owner
  reads "not a significant improvement over your best (X)").
* :func:`near_copy_check` — before a verdict: a run that repeats a
  reference run (the split's baselines, its identity's earlier runs) on all
  but a few evaluated topics or examples gets no verdict at all
  (``evaluation.ladder.near_copy_of``); every answer, a near-copy's too, is a
  ledger row (``ledger.verdict_record``).
* :func:`ladder_replay` — when new judgments become current, each
  participant's Ladder is run again on them, their results in upload order,
  from an empty best: exactly what they would have been shown had the new
  judgments been there from the start.

Baselines (uploaded by curators, marked ``is_baseline``) are exempt and shown
as such; splits without the Ladder release every result.
"""

from __future__ import annotations

import dataclasses
import logging
from collections import Counter
from typing import cast

import numpy as np
from django.db import transaction
from django.db.models import F, QuerySet
from django.utils.crypto import salted_hmac

from campaigns.selectors import phase_of
from catalogue.models import Dataset, Split
from evaluation.classification import bio_entities
from evaluation.errors import InputError
from evaluation.ladder import (
    NearCopy,
    answer_fingerprints,
    label_support_needed,
    label_support_refusal,
    ladder_step,
    ladder_step_macro_f1,
    majority_start,
    near_copy_of,
    topk_fingerprints,
)
from evaluation.measures import parse_measure
from evaluation.noisy_margin import MECHANISM, Margin, uniform_from_digest

from .. import disclosure
from ..models import LadderBest, ReleaseWait, Result, ResultPart, Submission, Verdict, on_board_q
from ..selectors import differenced_private_topics, load_per_query
from .fusion import FusionFailed
from .ledger import release_hold, release_record, verdict_record, waits_due
from .predictions import aligned_answers, gold_for, gold_labels
from .results import read_stored_run

logger = logging.getLogger(__name__)

#: What an exempt result's owner reads.
BASELINE_EXEMPT = "Baseline: released without the Ladder (a curator's reference run)."


def _vector(result: Result | ResultPart, measure: str) -> dict[str, float] | None:
    """The primary measure's per-query values of ``result`` by query id; None when it has none."""
    data = load_per_query(result)
    if "qids" not in data or measure not in data:
        return None
    return dict(zip(data["qids"].astype(str).tolist(), np.asarray(data[measure], dtype=np.float64).tolist()))


def release_step_of(*, result: Result, split: Split) -> float:
    """The grid ``result``'s released values sit on (``disclosure.release_step``): one topic's share of its N,
    or, on a classification split, what one example's label can move its macro-F1 (the gold's label supports)."""
    task = split.dataset.task
    if task in (Dataset.Task.SINGLE, Dataset.Task.MULTI) and result.qrels_version_id is not None:
        gold = gold_for(version=result.qrels_version, task=task)
        supports: Counter[str] = Counter()
        for answer in gold.answers.values():
            labels = [answer] if isinstance(answer, str | int) else list(cast("tuple[str, ...]", answer))
            supports.update(str(label) for label in labels)
        n_examples = len(gold.ids)
        return disclosure.release_step(
            n_topics=n_examples, label_supports=list(supports.values()),
            min_predicted=label_support_needed(n_examples=n_examples, n_labels=len(supports)))
    if task == Dataset.Task.NER and result.qrels_version_id is not None:
        # Entity-level macro-F1 over entity types: one gold entity moves its type's F1 as one example moves a
        # label's (no support rule for predicted entities: a file may predict a type once).
        gold = gold_for(version=result.qrels_version, task=task)
        types: Counter[str] = Counter(t for tags in gold.answers.values()
                                      for t, _, _ in bio_entities(cast("list[str]", tags)))
        return disclosure.release_step(n_topics=len(gold.ids), label_supports=list(types.values()), min_predicted=1)
    return disclosure.release_step(n_topics=result.n_queries or 0)


def _store_release(result: Result, *, split: Split) -> None:
    """Compute ``result``'s released primary value once (``disclosure.release_of``) and keep it on the row."""
    step = release_step_of(result=result, split=split)
    result.released_step = step
    result.released_score = disclosure.release_of(result.primary_score, step=step)


#: The salt of the verdict noise's key (``salted_hmac``: the site's ``SECRET_KEY`` with this salt).
NOISE_KEY_SALT = "lexboard.ladder.verdict-noise"


def verdict_draw(submission: Submission) -> float:
    """The upload's uniform draw of the Ladder's noisy margin: HMAC-SHA256 keyed by the site's secret key of the
    upload's content sha256 and the mechanism's version (``evaluation.noisy_margin.MECHANISM``).

    The same bytes give the same draw (a re-upload, a redelivered scoring, a replay on new judgments: one answer,
    not a fresh sample); without the key, which no participant has, it cannot be predicted. A run stored before
    contents were hashed falls back to its file's sha256, then to its id.
    """
    content = submission.content_sha256 or submission.sha256 or f"submission:{submission.pk}"
    return uniform_from_digest(salted_hmac(NOISE_KEY_SALT, f"{content}:{MECHANISM}", algorithm="sha256").digest())


Decided = tuple[bool, str, float | None, Margin | None]


def _decide(*, best: Result | None, new: Result, measure: str, split: Split) -> Decided:
    """(released, message, p, the noisy margin's pass) for ``new`` against ``best`` (None: the participant's
    first result here). On a hidden split the significance condition is the noisy margin with the upload's draw
    (``verdict_draw``); a public split with the Ladder keeps the sign-flip test alone.

    The values compared are the stored releases (``Result.released_score``): what the board shows. A first run
    is compared with the split's best baseline on the same judgments (``_best_baseline``), so that the
    free first release of a new identity is no probe; without a baseline, with an empty run.
    """
    if split.dataset.task != Dataset.Task.RETRIEVAL:
        return _decide_macro_f1(best=best, new=new, split=split)
    step = new.released_step or release_step_of(result=new, split=split)
    fmt = disclosure.ladder_format(split, step=step)
    new_shown = disclosure.stored_release(new, split=split)[0] or 0.0
    start_name = ""
    if best is None and (baseline := _best_baseline(split=split, version_id=new.qrels_version_id)) is not None:
        best, start_name = baseline, f"the best baseline ({baseline.submission.system_name})"
    best_shown = (disclosure.stored_release(best, split=split)[0] or 0.0) if best is not None else None
    new_values = _vector(new, measure)
    best_values = _vector(best, measure) if best is not None else {}
    if new_values is None or best_values is None:
        # A result stored without per-query values (none is since the per-query blob exists): no test is
        # possible, so only the displayed value going up by a step releases it.
        if best_shown is None or new_shown > best_shown:
            return True, f"Released: {fmt(new_shown)}.", None, None
        return False, (f"Not a significant improvement over {'your best' if not start_name else start_name} "
                       f"({fmt(best_shown)}); your best stays on the leaderboard."), None, None
    qids = sorted(set(best_values) | set(new_values))  # a query one of them lacks counts as 0 there
    decision = ladder_step(best=[best_values.get(q, 0.0) for q in qids] if best is not None else None,
                           new=[new_values.get(q, 0.0) for q in qids], fmt=fmt, grid=disclosure.ladder_grid(step),
                           new_shown=new_shown, best_shown=best_shown, start_name=start_name,
                           draw=_draw(new, split=split))
    return decision.released, decision.message, decision.p_value, decision.margin


def _draw(result: Result, *, split: Split) -> float | None:
    return verdict_draw(result.submission) if disclosure.hidden(split) else None


#: What the owner of a run shown on two sets of a shared task's topics reads (``_shown_twice``).
SHOWN_ON_THE_PUBLIC_PART = (
    "Not released on all topics: this run's score on the shared task's public topics was shown during the task, "
    "and with its score on all topics it would give its mean on the private topics (N × all − Npub × public), "
    "which only the private board shows, once, for each team's final run. Runs sent after the task are ranked "
    "on all topics.")
SHOWN_BEFORE_THE_TASK = (
    "Not released during the shared task: this run's score on all topics was shown before the task was set up on "
    "this split, and with its score on the public topics it would give its mean on the private topics "
    "(N × all − Npub × public).")


def _shown_twice(*, submission: Submission) -> str | None:
    """Why ``submission`` is not released: its means would be shown on two sets of a shared task's topics.

    After the reveal, a run shown on its public part during the phase would be shown on all topics; while the
    partition holds, a run sent before the phase was set up (and shown on all topics then) would be shown on
    its public part (``selectors.differenced_private_topics``). Either way the two released means give the
    run's private-part mean by difference, for every such run, not only the private board's rows: no value
    of it is released the second time. (Before, the Ladder asked such a run to improve significantly on the
    private topics too, which stopped pairs of runs from naming one private topic but released each run's
    private mean.)
    """
    if differenced_private_topics(submission=submission) is None:
        return None
    phase = phase_of(split_id=submission.split_id)
    return SHOWN_ON_THE_PUBLIC_PART if phase is not None and phase.revealed_at is not None else SHOWN_BEFORE_THE_TASK


def _decide_macro_f1(*, best: Result | None, new: Result, split: Split) -> Decided:
    """The Ladder of a classification or NER split: the swap test on macro-F1 (``evaluation.ladder``).

    Macro-F1 has no per-example values to store, so both prediction files are read again and aligned on the
    gold's examples. (Before, a run was released when its shown macro-F1 went up a step: one changed
    prediction was released exactly when it was right, one label per submission.)

    A participant's first run is compared with the split's best baseline on the same judgments, or, without
    one, with the most frequent gold label everywhere (``evaluation.ladder.majority_start``): from an empty
    prediction any first file was released, so a constant file told each language's count of its label, and
    "the most frequent label everywhere but a few chosen examples" read those examples' labels. A file that
    predicts a label on fewer than a handful of examples is not released (``label_support_refusal``).
    """
    dataset = split.dataset
    # Any label accepted: each file was checked when it was scored; a label the dataset no longer declares
    # must not make the best unreadable here (a new run's scoring, or a switch's replay, would fail on it).
    gold = dataclasses.replace(gold_for(version=new.qrels_version, task=dataset.task), labels=None)
    new_answers = aligned_answers(gold=gold, data=read_stored_run(new.submission))
    gold_answers = [gold.answers[i] for i in gold.ids]
    labelled = dataset.task in (Dataset.Task.SINGLE, Dataset.Task.MULTI)  # NER: tags per token, no such rules
    if labelled:
        refusal = label_support_refusal(answers=new_answers, n_labels=len(gold_labels(gold)))
        if refusal is not None:
            return False, refusal, None, None
    best_answers = aligned_answers(gold=gold, data=read_stored_run(best.submission)) if best is not None else None
    start, start_name = None, ""
    if best is None:
        baseline = _best_baseline(split=split, version_id=new.qrels_version_id)
        if baseline is not None:
            start = aligned_answers(gold=gold, data=read_stored_run(baseline.submission))
            start_name = f"the best baseline ({baseline.submission.system_name})"
        elif labelled:
            start = majority_start(gold_answers)
            start_name = "predicting the most frequent label everywhere"
    step = new.released_step or release_step_of(result=new, split=split)
    decision = ladder_step_macro_f1(task=dataset.task, gold=gold_answers, best=best_answers, new=new_answers,
                                    start=start, start_name=start_name,
                                    grid=disclosure.ladder_grid(step), fmt=disclosure.ladder_format(split, step=step),
                                    new_shown=disclosure.stored_release(new, split=split)[0],
                                    best_shown=(disclosure.stored_release(best, split=split)[0] if best is not None
                                                else None),
                                    draw=_draw(new, split=split))
    return decision.released, decision.message, decision.p_value, decision.margin


# --- the near-copy rule ----------------------------------------------------------------------------------


def _stored_fingerprints(submission: Submission, *, key: str, compute) -> dict[str, str] | None:
    """``submission``'s fingerprints for ``key`` (kept on the row once computed); None when its file is gone."""
    stored = submission.fingerprints or {}
    if stored.get("key") == key:
        return cast("dict[str, str]", stored.get("units") or {})
    try:
        units = compute(submission)
    except (InputError, OSError, ValueError, FusionFailed):
        return None  # removed after its retention period, or unreadable: no reference
    submission.fingerprints = {"key": key, "units": units}
    Submission.objects.filter(pk=submission.pk).update(fingerprints=submission.fingerprints)
    return units


def _references(*, submission: Submission, split: Split) -> list[tuple[str, Submission]]:
    """The runs a new run must differ from to be judged: the split's baselines and its identity's released runs
    (withdrawn or hidden later alike). The Ladder compares a run with one of them (the best baseline, or the
    identity's best), so a run repeating one of them on all but a few topics would have its verdict turn on
    those few; a run repeating an unreleased one is compared with a run it differs from broadly."""
    baselines = Submission.objects.filter(split=split, is_baseline=True, status=Submission.Status.SCORED)
    own = Submission.objects.filter(split=split, is_baseline=False, status=Submission.Status.SCORED,
                                    results__released=True,
                                    created_at__lte=submission.created_at).exclude(pk=submission.pk).distinct()
    own = (own.filter(entrant_team_id=submission.entrant_team_id) if submission.entrant_team_id is not None
           else own.filter(user_id=submission.user_id, entrant_team__isnull=True))
    named = [(f"the baseline {b.system_name}", b) for b in baselines.order_by("pk")]
    named += [(f"your run #{o.pk} ({o.system_name})", o) for o in own.order_by("-created_at", "-pk")]
    return named


def near_copy_check(*, result: Result, submission: Submission, split: Split) -> NearCopy | None:
    """Whether ``result``'s run repeats a reference run on all but a few evaluated topics (examples): then the
    Ladder gives no verdict (docs/security.md, "The verdict as a channel"). Decided by the runs alone."""
    task = split.dataset.task
    if task == Dataset.Task.RETRIEVAL:
        data = load_per_query(result)
        if "qids" not in data:
            return None
        units = data["qids"].astype(str).tolist()
        k = parse_measure(split.dataset.primary_measure).k or split.dataset.depth
        key = f"top{k}"

        def compute(sub: Submission) -> dict[str, str]:
            ranked = read_stored_run(sub).ranked()
            return topk_fingerprints({q: [d for d, _ in rows] for q, rows in ranked.items()}, k)
        unit = "topics"
    else:
        gold = dataclasses.replace(gold_for(version=result.qrels_version, task=task), labels=None)
        units = list(gold.ids)
        key = f"answers@{result.qrels_version_id}"

        def compute(sub: Submission) -> dict[str, str]:
            return answer_fingerprints(units, aligned_answers(gold=gold, data=read_stored_run(sub)))
        unit = "examples"
    new = _stored_fingerprints(submission, key=key, compute=compute)
    if new is None:
        return None
    references: dict[str, dict[str, str]] = {}
    for name, reference in _references(submission=submission, split=split):
        if (units_of := _stored_fingerprints(reference, key=key, compute=compute)) is not None:
            references.setdefault(name, units_of)
    return near_copy_of(new=new, references=references, units=units, unit=unit)


def _best_baseline(*, split: Split, version_id: int) -> Result | None:
    """The split's best baseline result on ``version_id`` (a curator's reference run): a first run's reference.

    A hidden split picks it by the released value (``Result.released_score``, on the grid), ties by the oldest
    run: the message names it, and picked at full precision the name would say which of two baselines tied on
    the grid is better, a finer number than the grid releases (#24).
    """
    results = (Result.objects.filter(on_board_q("submission__"), qrels_version_id=version_id,
                                     submission__split=split, submission__is_baseline=True,
                                     primary_score__isnull=False).select_related("submission"))
    if disclosure.hidden(split):
        return results.order_by(F("released_score").desc(nulls_last=True), "submission_id").first()
    return results.order_by("-primary_score", "submission_id").first()


def ladder_judge(*, result: Result, submission: Submission, split: Split, again: bool = False,
                 curator: bool = False) -> Result:
    """Release ``result`` (on its qrels version) or not; the caller holds the transaction and the split lock.

    Idempotent: a result judged already keeps its judgment (a redelivered
    scoring, or a curator's rescore of the same run on the same judgments,
    stores the same row again; judged against the best that came after it, an
    earlier release would leave the leaderboard). ``result_store`` clears the
    judgment when the scores changed. ``again``: judge it anyway (the replay).

    Every release on a hidden split is written to the ledger here, and an
    identity's first one waits when the split's daily budget of first releases
    is spent (``ledger.release_hold``; ``curator``: released outside it).
    """
    if not split.uses_ladder or submission.is_baseline or not result.scores:
        message = BASELINE_EXEMPT if submission.is_baseline and split.uses_ladder else ""
        released = True
        if result.scores and disclosure.hidden(split) and (twice := _shown_twice(submission=submission)):
            # Exempt from the verdict, not from the partition: a baseline (or a run of a split without the Ladder)
            # shown on a shared task's public part and on all topics gives its private-part mean (#37).
            released, message = False, twice
            ReleaseWait.objects.filter(result=result).delete()
        elif result.scores and (held := release_hold(result=result, submission=submission, split=split,
                                                     curator=curator)):
            released, message = False, held
        _store_release(result, split=split)
        Result.objects.filter(pk=result.pk).update(released=released, ladder_message=message, ladder_p=None,
                                                   released_score=result.released_score,
                                                   released_step=result.released_step)
        result.released, result.ladder_message, result.ladder_p = released, message, None
        if released and result.scores:
            release_record(result=result, submission=submission, split=split)
        return result
    if result.ladder_message and not again:
        return result
    if submission.entrant_team_id is not None:  # a shared task's team climbs one Ladder, whoever sent the run
        row, _ = LadderBest.objects.get_or_create(split_id=split.pk, team_id=submission.entrant_team_id,
                                                  qrels_version_id=result.qrels_version_id,
                                                  defaults={"user_id": submission.user_id})
    else:
        row, _ = LadderBest.objects.get_or_create(split_id=split.pk, user_id=submission.user_id, team=None,
                                                  qrels_version_id=result.qrels_version_id)
    # Locked alone (PostgreSQL refuses FOR UPDATE on the nullable side of a join); the best read after.
    row = LadderBest.objects.select_for_update(no_key=True).get(pk=row.pk)
    if row.result_id == result.pk:
        return result
    best = Result.objects.filter(pk=row.result_id).first() if row.result_id else None
    measure = split.dataset.primary_measure
    _store_release(result, split=split)  # before the verdict: the value the Ladder compares is the one shown
    if (twice := _shown_twice(submission=submission)) is not None:
        released, message, p = False, twice, None
        ReleaseWait.objects.filter(result=result).delete()
    elif (copy := near_copy_check(result=result, submission=submission, split=split)) is not None:
        # Before the hold: no verdict will ever come, and the answer depends on the runs alone.
        released, message, p = False, copy.message(), None
        ReleaseWait.objects.filter(result=result).delete()
        verdict_record(result=result, submission=submission, split=split, outcome=Verdict.Outcome.NEAR_COPY)
    elif held := release_hold(result=result, submission=submission, split=split, curator=curator):
        # Before the verdict: a hold given only to the runs the Ladder admits would tell the owner (and anyone
        # reading the note) the verdict a day before any number, a bit the ledger never counts. The verdict comes
        # when the run's turn comes (the sweep or a curator judges it again).
        released, message, p = False, held, None
    else:
        released, message, p, margin = _decide(best=best, new=result, measure=measure, split=split)
        if not released and "significant improvement" in message:
            message = disclosure.with_ladder_rule(message, split=split)
        verdict_record(result=result, submission=submission, split=split,
                       outcome=Verdict.Outcome.RELEASED if released else Verdict.Outcome.NOT_RELEASED, margin=margin)
    # The field holds MESSAGE_MAX characters: a longer message (it can name labels) failed the scoring on PostgreSQL.
    message = message[:disclosure.MESSAGE_MAX]
    Result.objects.filter(pk=result.pk).update(released=released, ladder_message=message, ladder_p=p,
                                               released_score=result.released_score,
                                               released_step=result.released_step)
    result.released, result.ladder_message, result.ladder_p = released, message, p
    if released:
        row.result = result
        row.save(update_fields=["result"])
        release_record(result=result, submission=submission, split=split)
    logger.info("Ladder on %s: result %s of #%s %s (p=%s)", split, result.pk, submission.pk,
                "released" if released else "not released", p)
    return result


def _replay_results(*, split: Split, version_id: int) -> QuerySet[Result]:
    return (
        Result.objects.filter(qrels_version_id=version_id, submission__split=split,
                              submission__status=Submission.Status.SCORED)
        .exclude(scores={})
        .select_related("submission")
        .order_by("submission__created_at", "submission_id")
    )


def ladder_replay(*, split: Split, version_id: int) -> int:
    """Run every participant's Ladder again on ``version_id``, their results in upload order; returns how many.

    Called when the version becomes current, under the split's lock, in the
    transaction of the switch: the released results and the bests on the new
    judgments are what the participants would have seen had these judgments
    been there from their first upload.
    """
    if not split.uses_ladder:
        releases_restore(split=split, version_id=version_id)
        return 0
    LadderBest.objects.filter(split=split, qrels_version_id=version_id).delete()
    results = list(_replay_results(split=split, version_id=version_id))
    for result in results:
        ladder_judge(result=result, submission=result.submission, split=split, again=True)
    return len(results)


def releases_restore(*, split: Split, version_id: int) -> int:
    """Compute again the stored released value of every result on ``version_id`` whose scores were replaced in
    place (a shared task's reveal or partition) on a split without the Ladder, whose replay judges nothing; the
    verdicts stand. Returns how many."""
    results = list(_replay_results(split=split, version_id=version_id))
    for result in results:
        _store_release(result, split=split)
        Result.objects.filter(pk=result.pk).update(released_score=result.released_score,
                                                   released_step=result.released_step)
    return len(results)


def release_waits_judge(*, wait_ids: list[int] | None = None, curator: bool = False) -> int:
    """Judge again, oldest first, runs waiting for the budget of first releases; returns how many were judged.

    The periodic sweep calls it for every waiting run (a new day's budget
    releases the first ones, the others wait on); a curator's admin action for
    chosen ones with ``curator=True`` (released now, outside the budget). The
    Ladder judges each against its owner's best as it is now.
    """
    chosen = waits_due() if wait_ids is None else wait_ids
    done = 0
    for wait_id, split_id in list(ReleaseWait.objects.filter(pk__in=chosen).values_list("pk", "split_id")):
        with transaction.atomic():
            Split.objects.select_for_update(no_key=True).filter(pk=split_id).first()  # the scoring's lock order
            wait = ReleaseWait.objects.select_related("result__submission__split__dataset").filter(pk=wait_id).first()
            if wait is None:
                continue
            result = wait.result
            ladder_judge(result=result, submission=result.submission, split=result.submission.split, again=True,
                         curator=curator)
            done += 1
    return done
