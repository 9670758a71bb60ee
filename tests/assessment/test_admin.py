"""The curator builds a pool in the admin ("Add pool"): the runs, the method, the assessors; refusals on the form."""

from __future__ import annotations

import pytest
from django.urls import reverse

from assessment.models import Pool

pytestmark = pytest.mark.django_db


def form(split, **extra):
    data = {"split": split.pk, "name": "admin pool", "method": "depth", "k": "2", "budget": "", "p": "0.8",
            "depth": "100", "overlap_share": "0.5", "seconds_per_judgment": "20"}
    data.update(extra)
    return data


def test_the_add_form_builds_and_assigns_the_pool(client, staff, test_split, runs, assessors):
    client.force_login(staff)
    assert client.get(reverse("admin:assessment_pool_add")).status_code == 200
    response = client.post(reverse("admin:assessment_pool_add"),
                           form(test_split, assessors=[u.pk for u in assessors], chosen_runs=[runs["B"].pk]))
    assert response.status_code == 302, response.content.decode()[-3000:]
    pool = Pool.objects.get()
    assert (pool.created_by, pool.params, list(pool.runs.all())) == (staff, {"k": 2}, [runs["B"]])
    assert pool.items.count() == 5  # B's top 2 of q1-q3 minus d3, judged
    assert pool.statistics["expected_cost"] == 5 * 1.5 * 20
    assert sorted(a.assessor.username for a in pool.assignments.all()) == ["carol", "dave"]
    page = client.get(reverse("assessment:pool", args=[pool.pk])).content.decode()
    assert "5 documents over 4 queries" in page and "carol" in page
    assert client.get(reverse("admin:assessment_pool_change", args=[pool.pk])).status_code == 200


def test_refusals_show_on_the_form_and_nothing_is_stored(client, staff, tiny_dataset, runs, assessors):
    client.force_login(staff)
    dev = tiny_dataset.splits.get(name="dev")
    response = client.post(reverse("admin:assessment_pool_add"), form(dev))
    assert response.status_code == 200 and "has no scored run to pool" in response.content.decode()
    test = tiny_dataset.splits.get(name="test")
    response = client.post(reverse("admin:assessment_pool_add"), form(test, k="", assessors=[assessors[0].pk]))
    assert "depth-k needs k" in response.content.decode()
    response = client.post(reverse("admin:assessment_pool_add"), form(test, assessors=[assessors[0].pk]))
    assert "an agreement sample needs two assessors" in response.content.decode()
    assert not Pool.objects.exists()


def test_the_add_form_builds_an_adaptive_mtf_pool(client, staff, test_split, runs):
    client.force_login(staff)
    response = client.post(reverse("admin:assessment_pool_add"),
                           form(test_split, method="mtf", k="", budget="3", overlap_share="0"))
    assert response.status_code == 302
    pool = Pool.objects.get()
    assert pool.params == {"budget": 3, "depth": 100} and pool.items.count() == 3  # one per answered query
    page = client.get(reverse("assessment:pool", args=[pool.pk])).content.decode()
    assert "3 documents over 4 queries so far" in page and "up to 7" in page
