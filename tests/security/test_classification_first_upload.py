"""A hidden classification split's first upload: the Ladder's start and the support rule for predicted labels.

The Ladder started every participant from an empty prediction, so any first file was released: a constant
file (every example "civil") told, through its macro-F1 (and per language), the exact number of "civil"
examples; a file predicting the most frequent label everywhere but a chosen label on a few chosen examples
read those examples' labels. Now a first file is compared with the split's best baseline or, without one,
with the most frequent label everywhere; and a label predicted on too few examples is not released.
Through the real services (``tests/classification/conftest.py``: 12 hidden examples, 3 labels).
"""

from __future__ import annotations

import re

import pytest

from submissions import disclosure
from submissions.models import Result
from submissions.services import submission_create, submission_score_now
from tests.classification import conftest as clf
from tests.classification.conftest import TEST_GOLD, predictions, upload

clf_dataset = clf.clf_dataset

pytestmark = [pytest.mark.django_db, pytest.mark.own_cache, pytest.mark.private_storage]

GOLD = {i: label for i, (label, _) in TEST_GOLD.items()}


def _score(split, user, answers: dict, name: str, *, is_baseline: bool = False) -> Result:
    sub = submission_create(user=user, split=split, upload=upload(predictions(answers), f"{name}.jsonl"),
                            metadata={"system_name": name, "family": "lexical", "visibility": "public"},
                            enqueue=False, is_baseline=is_baseline)
    sub = submission_score_now(sub.pk)
    assert sub.status == "scored", sub.error
    return sub.results.get()


def test_a_constant_first_file_is_not_released(clf_dataset, alice):
    test = clf_dataset.splits.get(name="test")
    result = _score(test, alice, {i: "civil" for i in GOLD}, "all-civil")
    assert not result.released, f"a constant file was released: {result.scores} tells the count of 'civil'"
    assert "most frequent label" in result.ladder_message


def test_a_crafted_first_file_reads_no_chosen_examples_labels(clf_dataset, alice, bob):
    """The most frequent label everywhere, and "tax" on two chosen examples (one right, one wrong)."""
    test = clf_dataset.splits.get(name="test")
    released = {}
    for user, chosen in ((alice, ("t4", "t8")), (bob, ("t1", "t2"))):  # t4, t8 are tax; t1, t2 are civil
        result = _score(test, user, {i: ("tax" if i in chosen else "civil") for i in GOLD}, f"probe-{user}")
        released[chosen] = result.released
    assert not any(released.values()), f"a crafted first file was released: {released}"


def test_a_first_file_is_compared_with_the_best_baseline(clf_dataset, alice, bob, staff):
    test = clf_dataset.splits.get(name="test")
    baseline = _score(test, staff, {**GOLD, "t3": "civil"}, "baseline", is_baseline=True)  # right on 11 of 12
    fair = _score(test, alice, {**GOLD, "t3": "civil", "t8": "civil", "t12": "tax"}, "worse than the baseline")
    # Two answers from the baseline's: a near-copy of it, which gets no verdict (evaluation.ladder.near_copy_of).
    assert not fair.released and fair.ladder_message.startswith("No verdict: this run repeats the baseline baseline")
    # The reference's value is not named: the only numbers are the runs' own counts (2 changed, 10 needed).
    assert "%" not in fair.ladder_message and set(re.findall(r"\d+", fair.ladder_message)) <= {"2", "10"}
    # Far from it, the first file is compared with the best baseline, which the message names with the rule.
    far = _score(test, bob, {i: {"civil": "criminal", "criminal": "tax", "tax": "civil"}[g] for i, g in GOLD.items()},
                 "far from the baseline")
    assert not far.released and "the best baseline (baseline)" in far.ladder_message, far.ladder_message
    # Then the rule it was held to, as disclosure.with_ladder_rule words it: the rule itself when the two fit the
    # stored message, else where it is explained (the noisy margin's rule, 204 characters, does not fit beside this
    # 143-character verdict in 300).
    verdict = far.ladder_message.split(" The Ladder", 1)[0]
    assert far.ladder_message == disclosure.with_ladder_rule(verdict, split=test), far.ladder_message
    assert far.ladder_message.endswith(disclosure.LADDER_DOCS), far.ladder_message
    assert "%" not in verdict and not re.search(r"\d", verdict), verdict
    baseline.refresh_from_db()
    shown = disclosure.ladder_format(test, step=baseline.released_step)(baseline.released_score)
    assert shown not in fair.ladder_message and f"{baseline.primary_score:.2f}" not in fair.ladder_message


def test_a_label_predicted_on_one_example_is_not_released(clf_dataset, alice):
    test = clf_dataset.splits.get(name="test")
    # Right on 10 of 12, but "tax" only on t4: the F1 of tax reads whether t4 is tax.
    answers = {**GOLD, "t8": "civil", "t9": "civil"}
    result = _score(test, alice, answers, "one tax")
    assert not result.released and "'tax' on 1" in result.ladder_message


def test_a_support_refusal_fits_the_stored_message():
    """The refusal names labels; it must fit ``Result.ladder_message`` (300): longer, PostgreSQL refused the row
    and the scoring failed (the tests above on PostgreSQL, before)."""
    from evaluation.ladder import label_support_refusal

    answers = ["civil"] * 60 + [f"{c * 60}" for c in "abcdefgh"]
    message = label_support_refusal(answers=answers, n_labels=3)
    assert message is not None and len(message) <= disclosure.MESSAGE_MAX, len(message)
    assert "and 5 more" in message
