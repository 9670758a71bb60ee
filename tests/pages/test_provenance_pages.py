"""Provenance on the pages: the board's "disclosed" mark and filters, the entry's full statement, the upload and
edit forms (a split that requires it refuses beside the fields), every export of the board and of a snapshot."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from snapshots.services import snapshot_take
from submissions.models import Result, Submission

pytestmark = pytest.mark.django_db

RUN = b"q1 Q0 d1 1 3.0 s\nq1 Q0 d2 2 2.0 s\nq2 Q0 d3 1 1.0 s\nq3 Q0 d4 1 5.0 s\n"


@pytest.fixture
def board(split_test, alice, bob, make_entry, reported):
    stated = make_entry(split_test, alice, "e5 tuned", {"R@10": 0.7}, training_data="train_split",
                        could_have_seen="corpus", models_used="intfloat/e5-large MIT\nopenai:gpt-4o proprietary",
                        training_data_note="fine-tuned on the 886 train questions")
    silent = make_entry(split_test, bob, "mystery", {"R@10": 0.6})
    return stated, silent


def _board(client, query: str = "") -> str:
    return client.get(reverse("leaderboard:dataset", args=["tiny"]) + "?split=test" + query).content.decode()


def _table(client, query: str) -> str:
    """The board's rows (the progress chart above them shows the whole board whatever the filters)."""
    html = _board(client, query)
    if '<table class="lb">' not in html:
        assert "No row matches these filters" in html
        return ""
    return html[html.index('<table class="lb">'):html.index("</table>")]


def test_the_board_marks_disclosed_entries_and_filters_on_provenance(client, board):
    stated, silent = board
    html = _board(client)
    assert html.count('class="badge badge-disclosed" title=') == 1  # one row; and the legend says what it means
    assert 'its owner stated what the system was trained on' in html
    assert "trained on this dataset&#x27;s train split; could have seen the corpus" in html
    assert "intfloat/e5-large (MIT), openai:gpt-4o (proprietary)" in html
    filtered = _table(client, "&disclosed=1")
    assert "e5 tuned" in filtered and "mystery" not in filtered and "BM25 (paper)" not in filtered
    assert "mystery" in _table(client, "&training_data=unknown") and "e5 tuned" not in _table(
        client, "&could_have_seen=no")
    old = _table(client, "&training=yes")  # a link made before the vocabulary
    assert "e5 tuned" in old and "mystery" not in old
    assert 'name="training_data" value="train_split" checked' in _board(client, "&training=yes")


def test_the_entry_page_shows_the_full_statement(client, board, bob):
    stated, silent = board
    html = client.get(stated.get_absolute_url()).content.decode()
    assert "this dataset&#x27;s train split" in html and "fine-tuned on the 886 train questions" in html
    assert "<code>openai:gpt-4o</code> — proprietary" in html and "the corpus</dd>" in html
    client.force_login(bob)
    own = client.get(silent.get_absolute_url()).content.decode()
    assert "not fully stated (training_data, could_have_seen missing" in own


def test_every_export_of_the_board_carries_provenance(client, board):
    export = lambda fmt: client.get(reverse("leaderboard:export", args=["tiny", fmt]) + "?split=test")  # noqa: E731
    rows = {r["system"]: r for r in csv.DictReader(io.StringIO(export("csv").content.decode()))}
    assert (rows["e5 tuned"]["training_data"], rows["e5 tuned"]["could_have_seen"], rows["e5 tuned"]["disclosed"]) \
        == ("train_split", "corpus", "yes")
    assert rows["e5 tuned"]["models"] == "intfloat/e5-large (MIT); openai:gpt-4o (proprietary)"
    assert (rows["mystery"]["training_data"], rows["mystery"]["disclosed"]) == ("unknown", "no")
    assert rows["BM25 (paper) & co_1"]["training_data"] == ""  # a paper's result: its paper states it
    entries = {e["system"]: e for e in json.loads(export("json").content)["entries"]}
    assert entries["e5 tuned"]["models"] == [{"id": "intfloat/e5-large", "licence": "MIT"},
                                              {"id": "openai:gpt-4o", "licence": "proprietary"}]
    assert entries["e5 tuned"]["disclosed"] is True and entries["mystery"]["disclosed"] is False
    assert entries["BM25 (paper) & co_1"]["training_data"] is None
    tex = export("tex").content.decode()
    assert "System & Trained on & Could see & R@10" in tex
    assert "e5 tuned & train & corpus & " in tex and "mystery & ? & ? & " in tex and "& -- & -- &" in tex
    assert "Trained on and could have seen: as each entry's owner states it" in tex


def test_a_snapshot_freezes_the_provenance_the_board_showed(client, board, split_test, alice):
    stated, _ = board
    snapshot = snapshot_take(split=split_test)
    row = next(r for r in snapshot.rows if r["system"] == "e5 tuned")
    assert (row["training_data"], row["could_have_seen"], row["disclosed"]) == ("train_split", "corpus", True)
    Submission.objects.filter(pk=stated.pk).update(training_data="unknown")  # the owner edits it later
    snapshot.refresh_from_db()
    assert next(r for r in snapshot.rows if r["system"] == "e5 tuned")["training_data"] == "train_split"
    rows = list(csv.DictReader(io.StringIO(
        client.get(reverse("snapshots:export", args=[snapshot.key, "csv"])).content.decode())))
    assert [(r["system"], r["training_data"], r["disclosed"]) for r in rows if r["kind"] != "reported"] == [
        ("e5 tuned", "train_split", "yes"), ("mystery", "unknown", "no")]
    tex = client.get(reverse("snapshots:export", args=[snapshot.key, "tex"])).content.decode()
    assert "e5 tuned & train & corpus &" in tex
    assert 'badge-disclosed' in client.get(snapshot.get_absolute_url()).content.decode()


def test_the_upload_form_of_a_split_that_requires_provenance_refuses_beside_the_fields(client, alice, split_test):
    split_test.requires_provenance = True
    split_test.save()
    client.force_login(alice)
    url = reverse("participants:upload", args=["tiny"]) + "?split=test"
    assert 'id="provenance-required"' in client.get(url).content.decode()
    form = {"system_name": "e5", "family": "dense", "visibility": "public", "training_data": "web_scale",
            "could_have_seen": "unknown"}
    response = client.post(url, {**form, "run": SimpleUploadedFile("run.txt", RUN)})
    assert response.status_code == 400
    errors = response.context["form"].errors
    assert errors["could_have_seen"] == ["say whether the system could have seen this split's corpus or test "
                                         "questions: no, corpus, test_questions, both"]
    assert errors["models_used"][0].startswith("list the models the system uses")
    assert not Submission.objects.exists()
    response = client.post(url, {**form, "could_have_seen": "no", "models_used": "intfloat/e5-large MIT",
                                 "run": SimpleUploadedFile("run.txt", RUN)})
    assert response.status_code == 302
    assert Submission.objects.get().disclosed


def test_the_edit_form_states_provenance_without_rescoring(client, board, bob):
    _, silent = board
    client.force_login(bob)
    url = reverse("participants:edit", args=[silent.pk])
    form = {"system_name": "mystery", "family": "other", "visibility": "public", "training_data": "none",
            "could_have_seen": "no", "models_used": ""}
    results = list(Result.objects.filter(submission=silent).values_list("pk", "scores"))
    assert client.post(url, form).status_code == 302
    silent.refresh_from_db()
    assert silent.disclosed and silent.status == "scored"
    assert list(Result.objects.filter(submission=silent).values_list("pk", "scores")) == results
    bad = client.post(url, {**form, "training_data": "web_scale", "models_used": "e5"})
    assert bad.status_code == 200
    assert "line 1: &#x27;e5&#x27; has no licence" in bad.content.decode()
