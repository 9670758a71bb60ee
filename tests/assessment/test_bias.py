"""Zobel's leave-one-run-out test on a pool's runs, worked by hand on the two runs of conftest.py."""

from __future__ import annotations

import pytest
from django.urls import reverse

from assessment.bias import pool_bias
from assessment.pools import pool_build, run_label

pytestmark = pytest.mark.django_db


def test_a_run_loses_what_only_it_found(test_split, runs, client, staff):
    # Within depth 2 only A retrieved d1 (q1; B has it at rank 3) and d4 (q3); d3 both found.
    # A's R@10 over q1-q3: (1/2 + 1 + 1/3) / 3; without d1 and d4: (0 + 1 + 0) / 3. B found nothing alone.
    pool = pool_build(split=test_split, name="p", method="depth", params={"k": 2})
    rows = {r.run: r for r in pool_bias(pool=pool)}
    a, b = rows[run_label(runs["A"])], rows[run_label(runs["B"])]
    assert a.measure == "R@10" and a.unique_relevant == 2
    assert a.with_all == pytest.approx((0.5 + 1 + 1 / 3) / 3) and a.without_own == pytest.approx(1 / 3)
    assert (a.rank_with, a.rank_without) == (1, 2)
    assert b.unique_relevant == 0 and b.with_all == b.without_own == pytest.approx(0.5)
    client.force_login(staff)
    body = client.get(reverse("assessment:bias", args=[pool.pk])).content.decode()
    assert "Zobel" in body and "0.3333" in body and "1 → 2" in body
