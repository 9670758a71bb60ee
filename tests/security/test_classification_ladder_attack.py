"""The classification Ladder's one-bit oracle, against the live stack (gunicorn, a worker, the API).

A hidden classification split has no per-example values to test, so its Ladder used to release a run when
its shown macro-F1 went up a step. A participant who changes one prediction of their best run learns from
the release alone whether that one prediction is right: one hidden label per submission. Now the Ladder
swaps the differing predictions between the two runs (``evaluation.ladder.macro_f1_improvement``): one
changed prediction can reach no p below 1/2, so neither probe is released, right or wrong. And a first
file is compared with the most frequent label everywhere (or the best baseline), not with an empty
prediction: a constant file is not released.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from catalogue.models import Split
from tests.classification.conftest import GOOD_PREDICTIONS, TEST_GOLD, make_clf_dataset, predictions

from .conftest import submit

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_one_changed_prediction_is_released_or_not_whether_or_not_it_is_right(stack, person):
    dataset = make_clf_dataset()
    Split.objects.filter(dataset=dataset).update(daily_limit=0, total_limit=0)
    target = SimpleNamespace(slug=dataset.slug)
    mallory = person("mallory")

    # A first run is compared with the most frequent label everywhere (no baseline here): a constant file is
    # not released, so its macro-F1 per language does not count the label's examples.
    _, constant = submit(mallory, target, predictions({i: "civil" for i in TEST_GOLD}), system_name="all civil")
    assert constant["status"] == "scored", constant
    assert constant["scores"] == {} and not constant["released"], f"a constant file was released: {constant}"

    base = GOOD_PREDICTIONS  # right on 11 of 12
    _, first = submit(mallory, target, predictions(base), system_name="base")
    assert first["status"] == "scored", first
    assert first["scores"].get("macro-F1") is not None, "a fair first run is released"

    probed = "t3"  # the base run says "civil"; the hidden gold says "criminal"
    assert base[probed] != TEST_GOLD[probed][0]
    released = {}
    for label in ("criminal", "tax"):
        _, answer = submit(mallory, target, predictions({**base, probed: label}),
                           system_name=f"{probed} is {label}")
        assert answer["status"] == "scored", answer
        released[label] = answer["scores"].get("macro-F1") is not None
    assert released["criminal"] == released["tax"], (
        f"the release says which label of {probed} is right: {released}")
    assert not any(released.values()), "one changed prediction is no significant improvement"
