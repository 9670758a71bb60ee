"""The classification Ladder's one-bit oracle, against the live stack (gunicorn, a worker, the API).

A hidden classification split has no per-example values to test, so its Ladder used to release a run when
its shown macro-F1 went up a step. A participant who changes one prediction of their best run learns from
the release alone whether that one prediction is right: one hidden label per submission. Then the Ladder
swapped the differing predictions between the two runs (``evaluation.ladder.macro_f1_improvement``): one
changed prediction could reach no p below 1/2. Now a run that repeats the identity's best on all but a few
examples gets no verdict at all (``evaluation.ladder.near_copy_of``), and a verdict is the noisy margin
(``evaluation.noisy_margin``): examples improved − worsened, plus Laplace noise of scale 1, must reach
max(8, ⌈1.645 √changed⌉). An attacker who knows both rules changes enough other examples without changing
their values (from one wrong label to another on examples whose label it knows) to be judged, and the verdict
turns on the one changed prediction again: net 1 if it is right, 0 if not, against a margin of 8 (released
with probability e^(−7)/2 or e^(−8)/2). Neither probe is released, right or wrong, with or without a verdict.
And a first file is compared with the most frequent label everywhere (or the best baseline), not with an
empty prediction: a constant file is not released.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from catalogue.models import Split
from evaluation.ladder import near_copy_needed
from submissions.models import Verdict
from tests.classification.conftest import TEST_GOLD, make_clf_dataset, predictions

from .conftest import submit

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

#: 60 hidden examples, ``TEST_GOLD`` five times over (as ``WIDE_GOLD`` is three times): civil 25, criminal 20,
#: tax 15. A base run right on all but 10 of them (wrong on purpose on 9 examples whose label the attacker
#: knows) still beats "civil" everywhere on 25 examples and is worse on none: a clear first release for the noisy
#: margin (net 25 against a margin of 9), which on 12 examples nothing right on 11 is (7 better at most).
GOLD = {f"t{12 * k + int(i[1:])}": answer for k in range(5) for i, answer in TEST_GOLD.items()}
PROBED = "t3"  # the base run says "civil"; the hidden gold says "criminal"
#: Examples whose label the attacker knows (not "civil"): the base answers them with the other wrong label.
KNOWN = [i for i, (label, _) in GOLD.items() if label != "civil" and i != PROBED][:near_copy_needed(len(GOLD)) - 1]
OTHER_WRONG = {"criminal": "tax", "tax": "criminal"}


def test_one_changed_prediction_is_released_or_not_whether_or_not_it_is_right(stack, person):
    dataset = make_clf_dataset(test_gold=GOLD)
    Split.objects.filter(dataset=dataset).update(daily_limit=0, total_limit=0)
    target = SimpleNamespace(slug=dataset.slug)
    mallory = person("mallory")

    # A first run is compared with the most frequent label everywhere (no baseline here): a constant file is
    # not released, so its macro-F1 per language does not count the label's examples.
    _, constant = submit(mallory, target, predictions({i: "civil" for i in GOLD}), system_name="all civil")
    assert constant["status"] == "scored", constant
    assert constant["scores"] == {} and not constant["released"], f"a constant file was released: {constant}"

    base = ({i: label for i, (label, _) in GOLD.items()} | {PROBED: "civil"}
            | {i: OTHER_WRONG[GOLD[i][0]] for i in KNOWN})
    _, first = submit(mallory, target, predictions(base), system_name="base")
    assert first["status"] == "scored", first
    assert first["scores"].get("macro-F1") is not None, "a fair first run is released"

    assert base[PROBED] != GOLD[PROBED][0]
    # Each probe changes the one prediction alone (a near-copy of the base: no verdict), then with the known
    # examples moved to their third label (still wrong, so no example's value changes but the probed one's):
    # enough changed examples for a verdict, which turns on the probed prediction alone.
    escape = {i: "civil" for i in KNOWN}
    released, messages, ids = {}, {}, {}
    for escaped in (False, True):
        for label in ("criminal", "tax"):
            answers = {**base, **(escape if escaped else {}), PROBED: label}
            ids[escaped, label], answer = submit(mallory, target, predictions(answers),
                               system_name=f"{PROBED} is {label}{' (escaped)' if escaped else ''}")
            assert answer["status"] == "scored", answer
            released[escaped, label] = answer["scores"].get("macro-F1") is not None
            messages[escaped, label] = answer["message"] or ""
        assert released[escaped, "criminal"] == released[escaped, "tax"], (
            f"the release says which label of {PROBED} is right: {released}")
    assert not any(released.values()), f"one changed prediction is no significant improvement: {released}"
    # The plain probes get no verdict; the escaped ones do (the attack gets what it aimed for), and are held back.
    assert all(messages[False, label].startswith("No verdict") for label in ("criminal", "tax")), messages
    assert not any(messages[True, label].startswith("No verdict") for label in ("criminal", "tax")), messages
    # Their ledger rows: the verdict turned on the probed prediction alone (net 1 when right, 0 when wrong, against
    # a margin of 8), so one label moved its odds by e^(1/b) at most (b = 1).
    verdicts = {label: Verdict.objects.get(submission_id=ids[True, label]) for label in ("criminal", "tax")}
    assert {label: v.net for label, v in verdicts.items()} == {"criminal": 1, "tax": 0}
    assert {(v.margin, v.epsilon) for v in verdicts.values()} == {(8.0, 1.0)}
