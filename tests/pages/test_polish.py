"""The small things a visitor notices: the icon, plurals, labels, the compare button, rescoring notes."""

from __future__ import annotations

import re

import pytest
from django.template import Context, Template
from django.urls import reverse

from lexboard.text import count, plural


def _html(response) -> str:
    assert response.status_code == 200, response.status_code
    return response.content.decode()


@pytest.mark.django_db
def test_it_redirects_favicon_ico_to_the_static_icon(client):
    response = client.get("/favicon.ico")
    assert response.status_code == 302
    assert response["Location"].endswith(".ico") and "/static/img/favicon" in response["Location"]
    assert "max-age=86400" in response["Cache-Control"]
    assert 'rel="icon"' in _html(client.get(reverse("leaderboard:home")))


def test_it_counts_in_words():
    assert count(1, "topic") == "1 topic"
    assert count(0, "topic") == "0 topics"
    assert count(2, "query", "queries") == "2 queries"
    assert plural(1, "has", "have") == "has" and plural(3, "has", "have") == "have"


def test_it_hides_the_compare_button_below_two_entries(client, split_test, alice, make_entry):
    url = reverse("leaderboard:dataset", args=["tiny"])
    make_entry(split_test, alice, "Only one", {"R@10": 0.5})
    html = _html(client.get(url))
    assert "Compare the checked entries" not in html and 'name="ids"' not in html
    assert "Significance on:" not in html

    make_entry(split_test, alice, "Second", {"R@10": 0.4})
    html = _html(client.get(url))
    assert "Compare the checked entries" in html and html.count('name="ids"') == 2


def test_it_names_the_team_once_when_the_owner_already_says_it(client, split_test, alice, bob, make_entry):
    from accounts.models import Profile

    Profile.objects.update_or_create(user=alice, defaults={"display_name": "Lexboard baselines"})
    make_entry(split_test, alice, "BM25", {"R@10": 0.5}, team="Lexboard")
    make_entry(split_test, bob, "Dense", {"R@10": 0.4}, team="Uni Example")
    html = _html(client.get(reverse("leaderboard:dataset", args=["tiny"])))
    tbody = html.split("<tbody>", 1)[1]
    assert '<span class="muted">Lexboard</span>' not in tbody
    assert '<span class="muted">Uni Example</span>' in tbody


def test_it_renders_code_spans_in_descriptions_and_escapes_the_rest(client, split_dev, alice, make_entry):
    sub = make_entry(split_dev, alice, "BM25", {"R@10": 0.5},
                     description="Made by `manage.py load_demo` <script>x</script>.")
    html = _html(client.get(reverse("participants:detail", args=[sub.pk])))
    assert "<code>manage.py load_demo</code>" in html
    assert "`manage.py" not in html and "<script>x</script>" not in html and "&lt;script&gt;" in html


def test_it_spaces_the_language_codes():
    html = Template("{% load formatting %}{{ codes|languages }}").render(Context({"codes": "fr,de,it"}))
    assert html == "fr, de, it"


def test_it_says_when_new_judgments_are_being_rescored(client, split_test, alice, make_entry):
    from catalogue.models import Split
    from catalogue.services import qrels_version_add

    sub = make_entry(split_test, alice, "BM25", {"R@10": 0.5})
    version, _ = qrels_version_add(split=split_test, qrels={"q1": {"d1": 1}}, publish=False)
    Split.objects.filter(pk=split_test.pk).update(pending_qrels=version)
    split_test.bump_cache_version()

    detail = _html(client.get(reverse("participants:detail", args=[sub.pk])))
    assert "Rescoring on qrels v2 is in progress: these scores are on v1" in detail
    board = _html(client.get(reverse("leaderboard:dataset", args=["tiny"])))
    assert "qrels v2) were published and every entry is being rescored" in board
    assert "the table shows v1 until all are done" in board


def test_it_labels_the_upload_form_in_plain_english(client, split_dev, alice):
    client.force_login(alice)
    html = _html(client.get(reverse("participants:upload", args=["tiny"]) + "?split=dev"))
    for label in ("Paper URL", "Code URL", "LLM calls per query", "LLM tokens per query"):
        assert f">{label}<" in html, label
    assert "Paper url" not in html and "Llm calls" not in html
    # The radio buttons are a group with a legend (a <label> cannot name them all).
    assert "<legend>On the public leaderboard?" in html


@pytest.mark.django_db
def test_it_keeps_refused_ids_in_the_compare_box(client):
    response = client.get(reverse("participants:compare") + "?ids=12,x")
    assert response.status_code == 400
    assert 'value="12,x"' in response.content.decode()


def test_it_explains_macro_f1_on_a_classification_dataset(client, tiny_dataset):
    tiny_dataset.task = "single"
    tiny_dataset.measures = ["macro-F1", "macro-F1/fr"]
    tiny_dataset.primary_measure = "macro-F1"
    tiny_dataset.save()
    html = _html(client.get(reverse("leaderboard:dataset", args=["tiny"])))
    assert "The unweighted mean over labels of each label" in html
    assert "macro-F1 over the French (fr) examples only." in html
    assert 'href="/docs/metrics/#classification"' in html
    assert 'id="classification"' in _html(client.get(reverse("leaderboard:docs")))


def test_it_writes_tiny_p_values_as_below_the_last_digit():
    html = Template("{% load formatting %}{{ a|pvalue }} {{ b|pvalue }} {{ c|pvalue }}").render(
        Context({"a": 0.00001, "b": 0.01234, "c": None}))
    assert html == "&lt; 0.0001 0.0123 –"


def test_it_lists_where_to_upload_when_one_has_no_submission(client, tiny_dataset, alice):
    tiny_dataset.is_published = True
    tiny_dataset.save()
    client.force_login(alice)
    html = _html(client.get(reverse("participants:mine")))
    assert "No submissions yet" in html
    assert reverse("participants:upload", args=["tiny"]) + "?split=test" in html
    assert reverse("participants:upload", args=["tiny"]) + "?split=dev" in html


def test_flash_messages_are_a_list_inside_a_live_region(client, split_dev):
    """``<ul role="status">`` takes the list's role away, and its ``<li>`` are then list items outside a list
    (axe: listitem, serious). The live region wraps the list instead."""
    response = client.get(reverse("participants:upload", args=["tiny"]), follow=True)  # "Log in to upload …"
    html = _html(response)
    assert 'class="messages"' in html
    assert not re.search(r"<(ul|ol)\b[^>]*\brole=", html), "a list with a role is no longer a list"
    assert re.search(r'<div[^>]*role="status"[^>]*>\s*<ul class="messages"', html)
