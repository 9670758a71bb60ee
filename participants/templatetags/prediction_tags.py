"""``{% prediction_format dataset split %}``: the expected prediction file of a classification or NER split."""

from __future__ import annotations

import json

from django import template

from evaluation.measures import MACRO_F1
from submissions.services.predictions import ANSWER_FIELD, dataset_labels

register = template.Library()

_MAX_LABELS = 30


@register.inclusion_tag("participants/_format_predictions.html")
def prediction_format(dataset, split):
    """The format box of the upload page for JSONL predictions: an example line with a real id, and the labels.

    The labels shown are the dataset's label set (every split's gold labels,
    what predictions are checked against), never one split's.
    """
    topic = split.topics.order_by("qid").values("qid", "extra").first() or {"qid": "1", "extra": {}}
    try:
        labels = sorted(dataset_labels(dataset=dataset))
    except Exception:  # the format box must render even when a gold version cannot be read
        labels = []
    first = labels[0] if labels else "civil"
    answer: str | list[str]
    if dataset.task == "single":
        answer = first
    elif dataset.task == "multi":
        answer = labels[:2] or ["civil", "tax"]
    else:
        n = len((topic.get("extra") or {}).get("tokens") or []) or 3
        answer = (["B-" + first, "I-" + first] + ["O"] * n)[:n] if labels else (["B-PER", "I-PER", "O"] + ["O"] * n)[:n]
    example = json.dumps({"id": topic["qid"], ANSWER_FIELD[dataset.task]: answer}, ensure_ascii=False)
    return {
        "dataset": dataset,
        "split": split,
        "example": example,
        "labels": labels[:_MAX_LABELS],
        "more_labels": max(0, len(labels) - _MAX_LABELS),
        "measure": MACRO_F1,
    }
