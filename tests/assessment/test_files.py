"""The pool as files for external tools, and their judgments read back with every wrong line named."""

from __future__ import annotations

import pytest
from django.contrib.messages import get_messages
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from assessment.files import JudgmentFormatError, judgments_import, pool_export, problems_of
from assessment.judging import grades_of, judgment_record
from assessment.models import Judgment
from assessment.pools import pool_assign, pool_build, run_label

pytestmark = pytest.mark.django_db


@pytest.fixture
def pool(test_split, runs):
    return pool_build(split=test_split, name="p", method="depth", params={"k": 2})


def test_the_trec_export_lists_the_pool_in_judging_order_with_grade_minus_one(pool):
    assert pool_export(pool=pool, fmt="trec") == (
        "q1 0 d11 -1\nq1 0 d14 -1\nq1 0 d9 -1\nq2 0 d15 -1\nq2 0 d12 -1\nq3 0 d13 -1\nq3 0 d16 -1\n")


def test_the_csv_export_has_an_empty_grade_column(pool, runs):
    lines = pool_export(pool=pool, fmt="csv").splitlines()
    assert lines[0] == '"query_id","doc_id","position","priority","runs","grade"'  # every cell quoted
    a, b = sorted([run_label(runs["A"]), run_label(runs["B"])])
    assert lines[6] == f'"q3","d13","1","2.0","{a} {b}",""' and len(lines) == 8


def test_imported_judgments_are_stored_as_the_assessors(pool, assessors):
    (carol,) = pool_assign(pool=pool, assessors=assessors[:1], overlap_share=0)
    judgment_record(assignment=carol, item=pool.items.get(docid="d11"), grade=0)
    data = b"q1 0 d11 2\nq1 0 d14 -1\nq2 0 d15 1\n"
    assert judgments_import(pool=pool, data=data, assessor=assessors[0]) == 2
    assert {pool.items.get(pk=k).docid: g for k, g in grades_of(carol).items()} == {"d11": 2, "d15": 1}
    assert Judgment.objects.filter(kind="import").count() == 2
    assert Judgment.objects.get(kind="assessment").superseded_by.grade == 2


def test_a_wrong_file_is_refused_whole_with_each_line_and_reason(pool, assessors):
    data = b"q1 0 d11 2\nq1 0 d99 1\nq2 0 d15 7\nq2 0 d12 x\nq1 0 d11 1\nq3 d13 1\n"
    with pytest.raises(JudgmentFormatError) as caught:
        judgments_import(pool=pool, data=data, assessor=assessors[0])
    problems = problems_of(caught.value)
    assert problems[0] == "line 2: document 'd99' of query 'q1' is not in this pool; judge only the documents the " \
                          "pool lists (check the ids)"
    assert [p.split(":")[0] for p in problems] == ["line 2", "line 3", "line 4", "line 5", "line 6"]
    assert "outside the allowed grades 0–3" in problems[1] and "judged twice (lines 1 and 5)" in problems[3]
    assert not Judgment.objects.exists()


def test_the_pages_download_and_import(client, pool, staff):
    client.force_login(staff)
    response = client.get(reverse("assessment:export", args=[pool.pk, "csv"]))
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    assert client.get(reverse("assessment:export", args=[pool.pk, "xml"])).status_code == 404
    bad = SimpleUploadedFile("j.txt", b"q1 0 d11 2\nq9 0 d1 1\n")
    response = client.post(reverse("assessment:import", args=[pool.pk]), {"file": bad})
    assert [str(m) for m in get_messages(response.wsgi_request)] == [
        "line 2: document 'd1' of query 'q9' is not in this pool; judge only the documents the pool lists (check the ids)"]
    lines = pool_export(pool=pool, fmt="csv").splitlines()
    lines[1] += "3"
    good = SimpleUploadedFile("j.csv", ("\n".join(lines) + "\n").encode())
    client.post(reverse("assessment:import", args=[pool.pk]), {"file": good})
    j = Judgment.objects.get()
    assert (j.item.docid, j.grade, j.assessor, j.kind) == ("d11", 3, staff, "import")
