"""What the clear record of a hidden split's row carries in place of its hidden fields.

An archive moves a hidden split's hidden material (:data:`.spec.ModelSpec.hidden_fields`) into the encrypted
member, or leaves it out (``--omit-hidden``). What stays in clear is what the site shows an anonymous visitor,
asked of the one owner, ``submissions/disclosure.py``: a released result's primary measure on its grid
(``released_scores``), nothing of an unreleased one; the Ladder's note as others read it (``ladder_note``);
warnings without those that count against the labels (``budget_warnings``); judgment counts as the qrels
history writes them (``count_released``); a shared task's public share as its page writes it (a percentage).
An importing host without the key keeps these; with it, the encrypted values replace them.
"""

from __future__ import annotations

from typing import Any

from django.db import models

from catalogue.models import Split
from submissions import disclosure


def _result(obj: Any, split: Split) -> dict[str, Any]:
    shown = disclosure.released_scores(obj, split=split)
    value, step = disclosure.stored_release(obj, split=split) if shown else (None, None)
    phase = getattr(split, "phase", None)
    n = disclosure.evaluated_count(obj, split=split, partitioned=bool(phase and phase.partition_active))
    return {
        "scores": shown,
        "primary_score": shown.get(split.dataset.primary_measure),
        "released_score": value,
        "released_step": step,
        "ladder_message": disclosure.ladder_note(obj, split=split, is_owner=False),
        "warnings": disclosure.budget_warnings(obj.warnings, split=split),
        "n_queries": n or 0,
    }


def _phase_shown(obj: Any, split: Split) -> dict[str, Any]:
    # The task page's "public share" (leaderboard/views_tasks.py): a whole percentage, never the seed.
    return {"public_share": round(100 * obj.public_share) / 100}


_SHOWN = {
    "catalogue.QrelsVersion": lambda obj, split: {
        # Unique per split like a checksum, and plainly not one.
        "sha256": f"withheld: version {obj.version}",
        "n_judgments": disclosure.count_released(obj.n_judgments, split=split),
    },
    "campaigns.Phase": _phase_shown,
    "submissions.Submission": lambda obj, split: {"warnings": disclosure.budget_warnings(obj.warnings, split=split)},
    "submissions.Result": _result,
}


def shown(label: str, obj: models.Model, split: Split) -> dict[str, Any]:
    """The clear values of ``obj``'s hidden fields (a subset of them; the others take their defaults on import)."""
    make = _SHOWN.get(label)
    return make(obj, split) if make else {}
