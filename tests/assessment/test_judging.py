"""Judging: every grade kept, undo walks back, the time measured by the server, and who may see what."""

from __future__ import annotations

import time

import pytest
from django.core import signing
from django.urls import reverse

from assessment.errors import AssessmentError
from assessment.judging import (
    first_unjudged,
    grades_of,
    judgment_record,
    judgment_undo,
    neighbours,
    progress_per_assessor,
    progress_per_query,
    seconds_since,
    shown_token,
    standing,
)
from assessment.models import Judgment
from assessment.pools import pool_assign, pool_build

pytestmark = pytest.mark.django_db


@pytest.fixture
def pool(test_split, runs):
    return pool_build(split=test_split, name="depth-2", method="depth", params={"k": 2})


@pytest.fixture
def carol_assignment(pool, assessors):
    carol, _ = pool_assign(pool=pool, assessors=assessors, overlap_share=0)
    return carol


def test_a_new_grade_supersedes_the_old_one_and_both_are_kept(carol_assignment):
    it = carol_assignment.items.order_by("qid", "position").first()
    first = judgment_record(assignment=carol_assignment, item=it, grade=1, seconds=4.5)
    second = judgment_record(assignment=carol_assignment, item=it, grade=3, seconds=2.0)
    first.refresh_from_db()
    assert first.superseded_by == second and second.superseded_by is None
    assert standing(item=it, assessor=carol_assignment.assessor).grade == 3
    assert Judgment.objects.filter(item=it).count() == 2
    assert (second.assessor, second.seconds_taken) == (carol_assignment.assessor, 2.0)


def test_undo_walks_back_through_the_assessors_grades(carol_assignment):
    x, y = carol_assignment.items.order_by("qid", "position")[:2]
    judgment_record(assignment=carol_assignment, item=x, grade=1)
    judgment_record(assignment=carol_assignment, item=y, grade=2)
    judgment_record(assignment=carol_assignment, item=y, grade=0)
    assert judgment_undo(assignment=carol_assignment) == y
    assert grades_of(carol_assignment) == {x.pk: 1, y.pk: 2}
    assert judgment_undo(assignment=carol_assignment) == y
    assert grades_of(carol_assignment) == {x.pk: 1}
    assert judgment_undo(assignment=carol_assignment) == x
    assert grades_of(carol_assignment) == {}
    assert judgment_undo(assignment=carol_assignment) is None
    assert Judgment.objects.count() == 6  # three grades, three undos: nothing deleted


def test_it_refuses_grades_off_the_scale_and_items_of_someone_else(carol_assignment, pool):
    it = carol_assignment.items.first()
    with pytest.raises(AssessmentError, match="not on the scale"):
        judgment_record(assignment=carol_assignment, item=it, grade=4)
    other = pool.items.exclude(pk__in=carol_assignment.items.all()).first()
    with pytest.raises(AssessmentError, match="not in your assignment"):
        judgment_record(assignment=carol_assignment, item=other, grade=1)


def test_navigation_and_progress(carol_assignment, pool):
    items = list(carol_assignment.items.order_by("qid", "position"))
    judgment_record(assignment=carol_assignment, item=items[0], grade=2, seconds=3.0)
    nav = neighbours(carol_assignment, items[0])
    assert nav.previous is None and nav.next == items[1] and nav.next_unjudged == items[1]
    assert (nav.index, nav.total, nav.judged) == (1, len(items), 1)
    assert first_unjudged(carol_assignment) == items[1]
    carol_row = next(r for r in progress_per_assessor(pool) if r["assessor"] == carol_assignment.assessor)
    assert (carol_row["items"], carol_row["judged"], carol_row["seconds"]) == (len(items), 1, 3.0)
    per_query = {r["qid"]: r for r in progress_per_query(pool)}
    assert per_query[items[0].qid]["some"] == 1 and per_query[items[0].qid]["complete"] == 1


def test_the_time_taken_comes_from_a_signed_timestamp():
    assert 0 <= seconds_since(shown_token()) < 5
    assert seconds_since(signing.dumps(time.time() - 12, salt="assessment.shown")) == pytest.approx(12, abs=1)
    assert seconds_since("forged") is None and seconds_since(None) is None
    assert seconds_since(signing.dumps(time.time() - 7200, salt="assessment.shown")) is None


# --- the pages ------------------------------------------------------------------------------------------


def test_the_assessor_judges_through_the_page(client, carol_assignment):
    client.force_login(carol_assignment.assessor)
    items = list(carol_assignment.items.order_by("qid", "position"))
    url = reverse("assessment:item", args=[carol_assignment.pk, items[0].pk])
    page = client.get(url)
    assert page.status_code == 200
    body = page.content.decode()
    assert "Question " + items[0].qid in body and 'id="grade-3"' in body and "assess.js" in body
    assert "<script>" not in body  # the CSP allows files only
    shown = signing.dumps(time.time() - 5, salt="assessment.shown")
    response = client.post(url, {"grade": "2", "shown": shown})
    assert response.status_code == 302
    assert response["Location"] == reverse("assessment:item", args=[carol_assignment.pk, items[1].pk])
    j = Judgment.objects.get()
    assert (j.grade, j.assessor, j.item) == (2, carol_assignment.assessor, items[0])
    assert j.seconds_taken == pytest.approx(5, abs=1)
    response = client.post(reverse("assessment:undo", args=[carol_assignment.pk]))
    assert response["Location"] == url and grades_of(carol_assignment) == {}


def test_the_question_terms_are_marked_in_the_document(client, carol_assignment, test_split):
    it = carol_assignment.items.order_by("qid", "position").first()
    test_split.topics.filter(qid=it.qid).update(text="Le locataire peut-il résilier le bail ?", category="housing")
    type(it).objects.filter(pk=it.pk).update(doc_text="Les locataires peuvent résilier leur <bail> à tout moment.")
    client.force_login(carol_assignment.assessor)
    body = client.get(reverse("assessment:item", args=[carol_assignment.pk, it.pk])).content.decode()
    assert "<mark>locataires</mark>" in body and "<mark>résilier</mark>" in body
    assert "&lt;<mark>bail</mark>&gt;" in body and "housing" in body  # escaped, then marked


def test_assessors_see_only_their_own_assignments(client, pool, assessors, alice, staff):
    carol, dave = pool_assign(pool=pool, assessors=assessors, overlap_share=0)
    it = dave.items.first()
    urls = [reverse("assessment:assignment", args=[dave.pk]), reverse("assessment:item", args=[dave.pk, it.pk])]
    client.force_login(assessors[0])
    assert [client.get(u).status_code for u in urls] == [404, 404]
    assert client.post(urls[1], {"grade": "1"}).status_code == 404
    assert client.get(reverse("assessment:pool", args=[pool.pk])).status_code == 404
    client.force_login(alice)  # a participant: no assessment pages at all
    assert client.get(reverse("assessment:home")).status_code == 404
    client.force_login(staff)  # curators look, but do not grade for someone
    assert [client.get(u).status_code for u in urls] == [200, 200]
    client.post(urls[1], {"grade": "1"})
    assert not Judgment.objects.exists()
    client.force_login(assessors[1])
    assert client.get(urls[1]).status_code == 200


def test_the_navigation_offers_assessment_to_assessors_and_staff_only(client, assessors, alice, staff):
    for user, shown in ((assessors[0], True), (staff, True), (alice, False)):
        client.force_login(user)
        body = client.get(reverse("accounts:profile")).content.decode()
        assert (f'href="{reverse("assessment:home")}"' in body) == shown, user


def test_the_assessor_sees_nothing_of_the_systems(client, carol_assignment):
    """How many runs retrieved a document and at which rank bias a judgment: the assessor's page shows neither."""
    it = carol_assignment.items.order_by("qid", "position").first()
    assert it.ranks  # the pool knows; the page must not say
    client.force_login(carol_assignment.assessor)
    body = client.get(reverse("assessment:item", args=[carol_assignment.pk, it.pk])).content.decode()
    assert "best rank" not in body and "retrieved by" not in body
    assert not any(run in body for run in it.ranks)
