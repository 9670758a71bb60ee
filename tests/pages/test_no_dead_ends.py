"""No dead ends: the pages offer only what works, and say why when they cannot."""

from __future__ import annotations

import pytest
from django.template import Context, Template
from django.urls import reverse

from catalogue.models import Split, Topic
from tests.classification.conftest import make_clf_dataset

pytestmark = pytest.mark.django_db


def page(client, split) -> str:
    response = client.get(reverse("leaderboard:dataset", args=[split.dataset.slug]) + f"?split={split.name}")
    assert response.status_code == 200
    return response.content.decode()


@pytest.fixture
def unjudged(tiny_dataset):
    split = Split.objects.create(dataset=tiny_dataset, name="blind", kind="test", hidden=True)
    Topic.objects.create(split=split, qid="q1", text="Question 1?")
    return split


def test_a_split_without_judgments_does_not_invite_uploads(client, unjudged, alice):
    html = page(client, unjudged)
    assert "not open for uploads yet" in html
    assert "Be the first" not in html and "Upload a run</a>" not in html
    client.force_login(alice)
    upload_page = client.get(reverse("participants:upload", args=[unjudged.dataset.slug]) + "?split=blind")
    assert b"not open for uploads yet" in upload_page.content and b"Upload and score" not in upload_page.content


def test_a_split_opened_before_judgments_says_runs_wait(client, unjudged):
    Split.objects.filter(pk=unjudged.pk).update(open_before_judgments=True)
    html = page(client, unjudged)
    assert "Upload a run</a>" in html
    assert "waits and is scored when the curators publish the judgments" in html


def test_the_classification_board_offers_neither_compare_nor_fusion(client, make_entry, alice, bob):
    split = make_clf_dataset().splits.get(name="test")
    make_entry(split, alice, "A", {"macro-F1": 0.5}, visibility="public")
    make_entry(split, bob, "B", {"macro-F1": 0.6}, visibility="public")
    html = page(client, split)
    assert "Compare the checked entries" not in html and "fuse runs" not in html


def test_the_retrieval_board_names_the_reference_of_a_comparison(client, make_entry, split_test, alice, bob):
    make_entry(split_test, alice, "A", {"R@10": 0.5}, visibility="public")
    make_entry(split_test, bob, "B", {"R@10": 0.6}, visibility="public")
    html = page(client, split_test)
    assert "Compare the checked entries" in html and "the higher-ranked checked row is the reference" in html


def test_the_log_in_page_says_why_it_is_there(client, split_test):
    url = reverse("participants:upload", args=[split_test.dataset.slug]) + "?split=test"
    response = client.get(url, follow=True)
    assert response.redirect_chain[-1][0].startswith(reverse("account_login"))
    assert "Log in to upload a run to Tiny (test split)." in response.content.decode()


def test_backticks_in_messages_render_as_code_and_nothing_else_does():
    out = Template("{% load formatting %}{{ m|code_spans }}").render(
        Context({"m": "write `qid Q0 docid rank score tag` <b>here</b>"})
    )
    assert out == "write <code>qid Q0 docid rank score tag</code> &lt;b&gt;here&lt;/b&gt;"


def test_an_upload_to_a_split_waiting_for_judgments_says_it_waits(client, unjudged, alice, private_run_storage):
    from django.core.files.uploadedfile import SimpleUploadedFile

    Split.objects.filter(pk=unjudged.pk).update(open_before_judgments=True)
    client.force_login(alice)
    response = client.post(
        reverse("participants:upload", args=[unjudged.dataset.slug]) + "?split=blind",
        {"run": SimpleUploadedFile("run.trec", b"q1 Q0 d1 1 1.0 x\n"), "system_name": "X", "family": "lexical",
         "visibility": "private", "split": "blind"},
        follow=True,
    )
    assert "it waits and is scored when the curators publish them" in response.content.decode()
