"""A new qrels version from a pool: the current judgments merged with the pool's, then published and rescored.

The merge is shown before it is made (:func:`pool_qrels_preview`): how many
judgments are added, which pooled documents the current qrels already grade
differently (they can, when another version was published after the pool was
built) and which rule settles them, and the disagreements left out. Making it
stores a new ``QrelsVersion`` with the curator's note and publishes it through
the staged publish-and-rescore of the submissions side: the leaderboard keeps
the old version until every entry is rescored on the new one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db import transaction

from catalogue.models import QrelsVersion
from catalogue.services import SmallJudgmentChange, qrels_version_add
from evaluation.qrels import read_qrels
from submissions.services import qrels_version_publish_and_rescore

from .consensus import DISAGREEMENT_RULES, Pair, final_grades
from .errors import AssessmentError
from .models import Pool

#: When the current qrels already grade a pooled document differently.
CONFLICT_RULES = {
    "pool": "the pool's grade replaces the current one",
    "current": "the current grade is kept",
}


@dataclass
class MergePreview:
    """What "make a qrels version from this pool" would store."""

    base: QrelsVersion | None
    merged: dict[str, dict[str, int]]
    added: int = 0
    same: int = 0
    conflicts: list[dict] = field(default_factory=list)
    left_out: list[Pair] = field(default_factory=list)
    conflict_rule: str = "pool"
    disagreement_rule: str = "leave_out"
    #: Judgments this merge adds or regrades across the dataset's relevance threshold: what a hidden split's
    #: minimum batch counts (``catalogue.services.qrels_batch_check``; non-relevant judgments move no board).
    relevance_changed: int = 0

    @property
    def n_judgments(self) -> int:
        return sum(len(d) for d in self.merged.values())

    @property
    def changed(self) -> int:
        """What a hidden split's minimum batch counts: judgments whose grade crosses the relevance threshold."""
        return self.relevance_changed

    @property
    def changes_anything(self) -> bool:
        return self.added > 0 or any(c["kept"] != c["current"] for c in self.conflicts)


def pool_qrels_preview(*, pool: Pool, conflict_rule: str = "pool", disagreement_rule: str = "leave_out") -> MergePreview:
    """The merge of the split's current qrels with the pool's grades under the two rules, not stored."""
    if conflict_rule not in CONFLICT_RULES:
        raise AssessmentError(f"unknown conflict rule {conflict_rule!r}; choose one of {', '.join(CONFLICT_RULES)}")
    split = pool.split
    base = split.current_qrels
    merged = read_qrels(base.text().encode()).to_dict() if base is not None else {}
    grades, left_out = final_grades(pool, rule=disagreement_rule)
    preview = MergePreview(base=base, merged=merged, left_out=left_out, conflict_rule=conflict_rule,
                           disagreement_rule=disagreement_rule)
    threshold = split.dataset.relevance_threshold
    for (qid, docid), grade in grades.items():
        current = merged.get(qid, {}).get(docid)
        if current is None or current < 0:  # absent, or trec_eval's "pooled, not judged"
            merged.setdefault(qid, {})[docid] = grade
            preview.added += 1
            preview.relevance_changed += grade >= threshold
        elif current == grade:
            preview.same += 1
        else:
            kept = grade if conflict_rule == "pool" else current
            merged[qid][docid] = kept
            preview.relevance_changed += (kept >= threshold) != (current >= threshold)
            preview.conflicts.append({"qid": qid, "docid": docid, "current": current, "pool": grade, "kept": kept})
    return preview


@transaction.atomic
def pool_qrels_make(*, pool: Pool, user, note: str, conflict_rule: str = "pool",
                    disagreement_rule: str = "leave_out", publish: bool = True,
                    small_change_reason: str = "") -> tuple[QrelsVersion, int]:
    """Store the merge as a new qrels version of the split and (by default) publish it; returns (version, rescored).

    Publishing goes through ``qrels_version_publish_and_rescore``: staged when
    the split has scored entries, the switch when the last is rescored. On a
    hidden split a merge that changes fewer judgments than the split's
    minimum batch is refused, and nothing is stored, unless
    ``small_change_reason`` says why it cannot wait.
    """
    if disagreement_rule not in DISAGREEMENT_RULES:
        raise AssessmentError(f"unknown rule {disagreement_rule!r}; choose one of {', '.join(DISAGREEMENT_RULES)}")
    locked = Pool.objects.select_for_update(no_key=True).get(pk=pool.pk)
    if locked.qrels_version_id is not None:
        raise AssessmentError(f"this pool already made {locked.qrels_version}; build a new pool for more judgments")
    preview = pool_qrels_preview(pool=pool, conflict_rule=conflict_rule, disagreement_rule=disagreement_rule)
    if not preview.changes_anything:
        raise AssessmentError("the pool adds no judgment to the current qrels; judge some documents first")
    if not note.strip():
        raise AssessmentError("write a note for the new version (what was judged, by whom), shown in its history")
    version, created = qrels_version_add(split=pool.split, qrels=preview.merged, note=note.strip()[:300],
                                         user=user, publish=False)
    if not created:
        raise AssessmentError(f"these judgments are already stored as {version}; publish that version instead")
    Pool.objects.filter(pk=pool.pk).update(qrels_version=version)
    pool.qrels_version = version
    rescored = 0
    if publish:
        try:
            rescored = qrels_version_publish_and_rescore(
                split=pool.split, version=version, small_change_reason=small_change_reason, user=user,
                override="a reason for a small change (the field below)")
        except SmallJudgmentChange as exc:  # the transaction rolls back: no version, the pool is free
            raise AssessmentError(f"{exc} Or store it without publishing, to publish with later judgments.") \
                from None
    return version, rescored
