"""A qrels version from a pool: the merge shown before it is made, the conflict rule, storing and publishing."""

from __future__ import annotations

import pytest
from django.urls import reverse

from assessment.consensus import judgment_adjudicate
from assessment.errors import AssessmentError
from assessment.judging import judgment_record
from assessment.merging import pool_qrels_make, pool_qrels_preview
from assessment.pools import pool_assign, pool_build
from catalogue.models import QrelsVersion, Split
from catalogue.services import qrels_version_add, qrels_version_publish
from evaluation.qrels import read_qrels

pytestmark = pytest.mark.django_db


@pytest.fixture
def judged(test_split, runs, assessors):
    """Depth-2 pool, carol alone; she grades q1's d11 2, d14 0, and q2's d15 1."""
    pool = pool_build(split=test_split, name="p", method="depth", params={"k": 2})
    (carol,) = pool_assign(pool=pool, assessors=assessors[:1], overlap_share=0)
    for docid, grade in (("d11", 2), ("d14", 0), ("d15", 1)):
        judgment_record(assignment=carol, item=pool.items.get(docid=docid), grade=grade)
    return pool


def test_the_preview_adds_the_new_judgments_to_the_current_ones(judged, test_split):
    preview = pool_qrels_preview(pool=judged)
    assert preview.base == test_split.current_qrels
    assert (preview.added, preview.same, preview.conflicts, preview.left_out) == (3, 0, [], [])
    assert preview.merged == {"q1": {"d1": 2, "d2": 1, "d11": 2, "d14": 0}, "q2": {"d3": 1, "d15": 1},
                              "q3": {"d4": 1, "d5": 1, "d6": 1}, "q4": {"d7": 0}}


def test_a_conflict_with_a_version_published_meanwhile_follows_the_rule(judged, test_split):
    newer, _ = qrels_version_add(split=test_split, qrels={**read_qrels(test_split.current_qrels.text().encode())
                                                          .to_dict(), "q1": {"d1": 2, "d2": 1, "d11": 0}})
    qrels_version_publish(split=test_split, version=newer)
    judged.split.refresh_from_db()
    preview = pool_qrels_preview(pool=judged, conflict_rule="pool")
    assert preview.conflicts == [{"qid": "q1", "docid": "d11", "current": 0, "pool": 2, "kept": 2}]
    assert preview.merged["q1"]["d11"] == 2 and preview.added == 2
    kept = pool_qrels_preview(pool=judged, conflict_rule="current")
    assert kept.merged["q1"]["d11"] == 0 and kept.conflicts[0]["kept"] == 0


def test_making_the_version_stores_it_with_its_note_and_stages_the_rescoring(judged, test_split, staff):
    before = test_split.current_qrels
    version, rescored = pool_qrels_make(pool=judged, user=staff, note="depth-2 pool, carol")
    assert (version.version, version.note, version.created_by, version.n_judgments) == (2, "depth-2 pool, carol",
                                                                                         staff, 10)
    assert read_qrels(version.text().encode()).to_dict()["q1"]["d11"] == 2
    split = Split.objects.get(pk=test_split.pk)
    # Two scored entries: the version is staged while the workers rescore them; the board keeps v1.
    assert rescored == 2 and split.pending_qrels == version and split.current_qrels == before
    judged.refresh_from_db()
    assert judged.qrels_version == version
    with pytest.raises(AssessmentError, match="already made"):
        pool_qrels_make(pool=judged, user=staff, note="again")


def test_it_refuses_a_pool_that_adds_nothing_or_a_version_without_a_note(test_split, runs, staff):
    pool = pool_build(split=test_split, name="p", method="depth", params={"k": 1})
    with pytest.raises(AssessmentError, match="adds no judgment"):
        pool_qrels_make(pool=pool, user=staff, note="x")
    judgment_adjudicate(item=pool.items.first(), user=staff, grade=1)
    with pytest.raises(AssessmentError, match="write a note"):
        pool_qrels_make(pool=pool, user=staff, note=" ")
    assert QrelsVersion.objects.filter(split=test_split).count() == 1


def test_the_page_shows_the_merge_then_stores_it_on_confirmation(client, judged, staff, test_split):
    client.force_login(staff)
    url = reverse("assessment:make_qrels", args=[judged.pk])
    body = client.get(url).content.decode()
    assert "<strong>3</strong> judgments added" in body and 'id="store-version"' in body
    body = client.post(url, {"conflict_rule": "current", "disagreement_rule": "max", "note": "n",
                             "confirm": "no"}).content.decode()
    assert "rule: current" in body and QrelsVersion.objects.filter(split=test_split).count() == 1
    response = client.post(url, {"conflict_rule": "pool", "disagreement_rule": "leave_out", "note": "from the pool",
                                 "publish": "on", "confirm": "yes"})
    assert response.status_code == 302
    assert QrelsVersion.objects.get(split=test_split, version=2).note == "from the pool"


def test_on_a_hidden_split_a_small_pool_is_refused_before_anything_is_stored_or_published(
    client, judged, staff, test_split
):
    """Three judgments published alone would let anyone with runs on the board read them off its moves
    (tests/security/test_qrels_batch_leak.py): the page says so, stores nothing, and takes a curator's reason."""
    Split.objects.filter(pk=test_split.pk).update(min_judgment_batch=20)
    client.force_login(staff)
    url = reverse("assessment:make_qrels", args=[judged.pk])
    body = client.get(url).content.decode()
    # Three judgments, two of them relevant: the batch counts relevance changes (#37).
    assert "2 judgments changed across the relevance threshold" in body and "publishes at least 20 at once" in body
    assert "too few to publish" in body
    fields = {"conflict_rule": "pool", "disagreement_rule": "leave_out", "note": "three", "publish": "on",
              "confirm": "yes"}
    body = client.post(url, fields, follow=True).content.decode()
    assert "changes 2 judgments against the current v1" in body and "at least 20" in body
    assert "a reason for a small change (the field below)" in body
    assert QrelsVersion.objects.filter(split=test_split).count() == 1
    judged.refresh_from_db()
    assert judged.qrels_version is None
    # Stored without publishing: kept for a later batch.
    response = client.post(url, {**fields, "publish": ""})
    assert response.status_code == 302 and QrelsVersion.objects.filter(split=test_split).count() == 2
    test_split.refresh_from_db()
    assert test_split.pending_qrels is None and test_split.current_qrels.version == 1


def test_a_curator_publishes_a_small_pool_with_a_reason(judged, staff, test_split):
    Split.objects.filter(pk=test_split.pk).update(min_judgment_batch=20)
    with pytest.raises(AssessmentError, match="changes 2 judgments"):
        pool_qrels_make(pool=judged, user=staff, note="three")
    version, rescored = pool_qrels_make(pool=judged, user=staff, note="three",
                                        small_change_reason="wrong grades reported by the task's participants")
    assert rescored == 2 and version.small_change_reason.startswith("wrong grades")
    assert version.small_change_by == staff
