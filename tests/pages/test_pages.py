"""Every public page renders, with and without data; the leaderboard table says what it shows."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse


def _body(response) -> str:
    return response.content.decode()


def _systems_in_table(html: str) -> list[str]:
    tbody = html.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    return re.findall(r'<td class="system">\s*(?:<a [^>]*>|<span>)([^<]+)<', tbody)


@pytest.mark.django_db
def test_it_renders_the_home_page_without_data(client):
    response = client.get(reverse("leaderboard:home"))
    assert response.status_code == 200
    assert "No benchmarks yet" in _body(response)


def test_it_renders_the_home_page_with_the_best_entry(client, split_test, alice, make_entry):
    make_entry(split_test, alice, "Best system", {"R@10": 0.81})
    make_entry(split_test, alice, "Other", {"R@10": 0.5})
    html = _body(client.get(reverse("leaderboard:home")))
    assert "Tiny benchmark" in html and "Best system" in html and "81.00" in html
    assert "2 entries scored here" in html


def test_it_renders_the_benchmark_page(client, tiny_dataset):
    response = client.get(reverse("leaderboard:benchmark", args=["tiny"]))
    assert response.status_code == 200
    assert reverse("leaderboard:dataset", args=["tiny"]) in _body(response)


def test_it_renders_an_empty_dataset_page_with_upload_help(client, tiny_dataset):
    response = client.get(reverse("leaderboard:dataset", args=["tiny"]))
    html = _body(response)
    assert response.status_code == 200
    assert "No submissions yet" in html
    assert "python -m evaluation score" in html
    assert "/api/v1/submissions/" in html


def test_it_renders_the_dataset_page_with_entries(client, split_test, alice, staff, make_entry, reported):
    make_entry(split_test, alice, "Alice's system", {"R@10": 0.4, "MAP@10": 0.3}, paper_url="https://example.org/a")
    make_entry(split_test, staff, "BM25 baseline", {"R@10": 0.5, "MAP@10": 0.2}, is_baseline=True)
    response = client.get(reverse("leaderboard:dataset", args=["tiny"]))
    html = _body(response)
    assert response.status_code == 200
    assert 'aria-sort="descending"' in html
    assert "badge-baseline" in html and "badge-reported" in html
    assert "reported in the paper, not scored here" in html
    assert "https://example.org/a" in html
    assert "Alice&#x27;s system" in html


def test_it_marks_reported_rows_and_leaves_them_unranked(client, split_test, alice, make_entry, reported):
    make_entry(split_test, alice, "mine", {"R@10": 0.4})
    html = _body(client.get(reverse("leaderboard:dataset", args=["tiny"])))
    reported_row = html.split('class="row-reported"', 1)[1].split("</tr>", 1)[0]
    assert 'title="Reported in the paper, not scored here">–</span>' in reported_row
    assert "badge-reported" in reported_row
    scored_row = html.split('class="row-scored"', 1)[1].split("</tr>", 1)[0]
    assert '<td class="num rank">1</td>' in scored_row


def test_it_changes_the_order_when_sorting_by_another_measure(client, split_test, alice, make_entry):
    make_entry(split_test, alice, "recall-first", {"R@10": 0.9, "MAP@10": 0.1})
    make_entry(split_test, alice, "map-first", {"R@10": 0.1, "MAP@10": 0.9})
    url = reverse("leaderboard:dataset", args=["tiny"])
    assert _systems_in_table(_body(client.get(url))) == ["recall-first", "map-first"]
    html = _body(client.get(url, {"sort": "MAP@10"}))
    assert _systems_in_table(html) == ["map-first", "recall-first"]
    sorted_header = html.split('aria-sort="descending"', 1)[1].split("</th>", 1)[0]
    assert "MAP@10" in sorted_header


def test_it_offers_sort_links_that_keep_the_split(client, split_dev, alice, make_entry):
    make_entry(split_dev, alice, "dev run", {"R@10": 0.9})
    html = _body(client.get(reverse("leaderboard:dataset", args=["tiny"]), {"split": "dev"}))
    assert "?split=dev&amp;sort=MAP%4010" in html
    assert "dev run" in html


def test_it_shows_ties_with_a_shared_rank(client, split_test, alice, make_entry):
    for name, value in [("a", 0.5), ("b", 0.5), ("c", 0.4)]:
        make_entry(split_test, alice, name, {"R@10": value})
    html = _body(client.get(reverse("leaderboard:dataset", args=["tiny"])))
    assert re.findall(r'<td class="num rank">(\d+)</td>', html) == ["1", "1", "3"]


def test_it_shows_private_entries_only_to_their_owner(client, split_test, alice, bob, make_entry):
    make_entry(split_test, alice, "secret-system", {"R@10": 0.4}, visibility="private")
    url = reverse("leaderboard:dataset", args=["tiny"])
    assert "secret-system" not in _body(client.get(url))
    client.force_login(bob)
    assert "secret-system" not in _body(client.get(url))
    client.force_login(alice)
    html = _body(client.get(url))
    assert "secret-system" in html and "badge-private" in html


def test_it_shows_anonymous_entries_as_anonymous(client, split_test, alice, make_entry):
    make_entry(split_test, alice, "masked", {"R@10": 0.4}, visibility="anonymous", team="Alice Lab")
    html = _body(client.get(reverse("leaderboard:dataset", args=["tiny"])))
    row = html.split('class="row-scored"', 1)[1].split("</tr>", 1)[0]
    assert "anonymous" in row and "alice" not in row.lower()


def test_it_formats_values_in_percent(client, split_test, alice, make_entry, tiny_dataset):
    """One scale across the site (issue 14); Dataset.display, which once chose another, is gone (#26)."""
    make_entry(split_test, alice, "x", {"R@10": 0.51333})
    body = _body(client.get(reverse("leaderboard:dataset", args=["tiny"])))
    assert "51.33" in body and "0.5133" not in body
    assert not hasattr(type(tiny_dataset), "display")


def test_it_shows_the_citation_with_a_copy_button(client, tiny_dataset):
    tiny_dataset.citation = "@inproceedings{tiny2024,\n  title = {Tiny & <Small>},\n}"
    tiny_dataset.save()
    html = _body(client.get(reverse("leaderboard:dataset", args=["tiny"])))
    assert '<pre id="citation"' in html and "Tiny &amp; &lt;Small&gt;" in html
    assert 'data-copy-target="citation"' in html
    assert "js/lexboard.js" in html and "<script>" not in html


def test_it_lists_measures_with_their_definitions(client, tiny_dataset):
    html = _body(client.get(reverse("leaderboard:dataset", args=["tiny"])))
    assert "map_cut_10" in html  # from evaluation.measures


def test_it_switches_splits_and_refuses_unknown_ones(client, tiny_dataset):
    url = reverse("leaderboard:dataset", args=["tiny"])
    html = _body(client.get(url, {"split": "dev"}))
    assert "dev split" in html
    response = client.get(url, {"split": "nope"})
    assert response.status_code == 404
    assert "no split called" in _body(response)


def test_it_hides_unpublished_datasets_from_visitors(client, staff, tiny_dataset):
    tiny_dataset.is_published = False
    tiny_dataset.save()
    url = reverse("leaderboard:dataset", args=["tiny"])
    assert client.get(url).status_code == 404
    client.force_login(staff)
    assert client.get(url).status_code == 200


def test_it_renders_the_docs_page(client, db):
    response = client.get(reverse("leaderboard:docs"))
    html = _body(response)
    assert response.status_code == 200
    for needle in ["grade is ≥ 1", "-c", "docid, descending", "map_cut_k", "ndcg_cut_k", "CivC::11", "Holm",
                   'id="suite-aggregates"', "harmonic mean"]:
        assert needle in html


@pytest.mark.django_db
def test_it_answers_unknown_addresses_with_a_friendly_404(client):
    response = client.get("/no/such/page/")
    assert response.status_code == 404
    assert "Page not found" in _body(response)
    response = client.get(reverse("leaderboard:dataset", args=["missing"]))
    assert response.status_code == 404
    assert "no dataset called" in _body(response)


def test_it_renders_the_500_page_without_a_request_context(rf):
    from lexboard.error_pages import server_error

    response = server_error(rf.get("/"))
    assert response.status_code == 500 and "Something went wrong" in response.content.decode()


def test_it_shows_navigation_for_visitors_and_members(client, alice, tiny_dataset):
    html = _body(client.get(reverse("leaderboard:home")))
    assert 'aria-label="Main"' in html and "Leaderboards" in html
    client.force_login(alice)
    html = _body(client.get(reverse("leaderboard:home")))
    assert "alice" in html


def _page_queries(client, url, fresh_cache) -> int:
    fresh_cache()
    with CaptureQueriesContext(connection) as ctx:
        assert client.get(url).status_code == 200
    return len(ctx.captured_queries)


def test_it_renders_the_dataset_page_in_constant_queries(client, split_test, alice, bob, make_entry, reported, fresh_cache):
    url = reverse("leaderboard:dataset", args=["tiny"])
    client.force_login(alice)
    for i in range(5):
        make_entry(split_test, [alice, bob][i % 2], f"s{i}", {"R@10": i / 100}, visibility=["public", "private"][i % 2])
    few = _page_queries(client, url, fresh_cache)
    for i in range(45):
        make_entry(split_test, [alice, bob][i % 2], f"t{i}", {"R@10": i / 100}, visibility=["public", "anonymous"][i % 2])
    many = _page_queries(client, url, fresh_cache)
    assert few == many, (few, many)


def test_it_renders_a_dataset_without_splits_and_an_empty_benchmark(client, db):
    from catalogue.models import Benchmark, Dataset

    bench = Benchmark.objects.create(slug="empty", name="Empty benchmark")
    Dataset.objects.create(benchmark=bench, slug="bare", name="Bare", language="el", measures=["R@10"], primary_measure="R@10")
    Benchmark.objects.create(slug="nothing", name="Nothing yet")
    assert "no split yet" in _body(client.get(reverse("leaderboard:dataset", args=["bare"])))
    assert "No published datasets" in _body(client.get(reverse("leaderboard:benchmark", args=["nothing"])))
    assert client.get(reverse("leaderboard:home")).status_code == 200
    assert client.get(reverse("leaderboard:benchmark", args=["missing"])).status_code == 404


def test_it_links_scored_rows_to_their_submission_page(client, split_test, alice, make_entry):
    sub = make_entry(split_test, alice, "linked", {"R@10": 0.4})
    html = _body(client.get(reverse("leaderboard:dataset", args=["tiny"])))
    detail = reverse("participants:detail", args=[sub.pk])
    assert f'href="{detail}"' in html


def test_it_offers_an_upload_button_for_the_shown_split(client, tiny_dataset):
    html = _body(client.get(reverse("leaderboard:dataset", args=["tiny"]), {"split": "dev"}))
    upload = reverse("participants:upload", args=["tiny"])
    assert f'href="{upload}?split=dev"' in html
