"""Compare on a hidden split, against the live stack (gunicorn, a worker, the API): no p-value digits.

Two participants' released runs on the hidden ``secret`` split (``tests/security/conftest.py``). Compare gave
randomization and t-test p-values to two significant digits on any of the five measures; the t-test's p is a
function of the mean and of Σd² of the per-query differences, an equation the released means do not give.
"""

from __future__ import annotations

import pytest

from .conftest import submit

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_compare_answers_bands_on_the_primary_measure_only(secret, person, visitor):
    alice, bob = person("alice"), person("bob")
    a, first = submit(alice, secret, secret.run_text(), system_name="good", visibility="public")
    shifted = {q: docs[3:] + docs[:3] for q, docs in secret.run.items()}
    b, second = submit(bob, secret, secret.run_text(overrides=shifted), system_name="shifted", visibility="public")
    assert first["released"] and second["released"], (first, second)
    for measure in ("MAP@100", "nDCG@10", "MRR@10"):
        answer = visitor.get(f"/api/v1/compare/?submissions={a},{b}&measure={measure}")
        assert answer.status == 403, f"compare on {measure}: {answer.status} {answer.body[:300]}"
        assert "R@100" in answer.json()["error"]["message"]
    body = visitor.get(f"/api/v1/compare/?submissions={a},{b}").json()
    assert body["measure"] == "R@100"
    assert body["p_randomization"] is None and body["p_ttest"] is None, f"p-value digits: {body}"
    assert body["p_band"] in ("p < 0.01", "p < 0.05", "p ≥ 0.05")
    page = visitor.get(f"/submissions/compare/?ids={a},{b}&measure=MAP@100").body
    assert "t-test" not in page and ">MAP@100<" not in page.replace('<option value="MAP@100">MAP@100<', "")
