"""GET /api/v1/datasets/, the leaderboard endpoint, the OpenAPI schema and the docs page."""

import io
import json
import re

import pytest
import yaml
from django.urls import reverse
from drf_spectacular.validation import validate_schema
from rest_framework.test import APIClient

from catalogue.models import Dataset
from submissions.services import submission_score_now

from .conftest import PERFECT, WEAK, run_bytes

pytestmark = pytest.mark.django_db


def scored(client, ranking, *, name, **fields):
    data = {"dataset": "tiny", "system_name": name, "run_file": io.BytesIO(run_bytes(ranking))}
    data["run_file"].name = "run.txt"
    data.update(fields)
    response = client.post(reverse("api:submissions"), data, format="multipart")
    assert response.status_code == 202, response.content
    return submission_score_now(response.json()["id"])


def test_it_lists_datasets_with_splits_and_measures(tiny_dataset):
    body = APIClient().get(reverse("api:datasets")).json()
    assert [d["slug"] for d in body] == ["tiny"]
    tiny = body[0]
    assert tiny["measures"] == ["R@10", "MAP@10", "MRR@10", "nDCG@10"]
    assert tiny["primary_measure"] == "R@10"
    assert tiny["docid_example"] == "d1"
    assert tiny["default_split"] == "test"
    splits = {s["name"]: s for s in tiny["splits"]}
    assert splits["test"]["hidden"] is True and splits["dev"]["hidden"] is False
    assert splits["test"]["qrels_version"] == 1
    assert splits["test"]["leaderboard"].endswith("/api/v1/datasets/tiny/leaderboard?split=test")
    text = json.dumps(body)
    assert "qrels_gz" not in text and '"d7"' not in text and "grade" not in text


def test_it_states_each_datasets_averaging_convention_and_score_precision(tiny_dataset):
    """#27 item 3: the averaging convention named exactly in the API, as in the docs and the CLI's help."""
    tiny = APIClient().get(reverse("api:datasets")).json()[0]
    assert (tiny["empty_queries"], tiny["score_precision"], tiny["relevance_threshold"]) == ("omit", "float32", 1)
    Dataset.objects.filter(pk=tiny_dataset.pk).update(empty_queries="count", score_precision="float64",
                                                     relevance_threshold=2)
    tiny = APIClient().get(reverse("api:datasets")).json()[0]
    assert (tiny["empty_queries"], tiny["score_precision"], tiny["relevance_threshold"]) == ("count", "float64", 2)
    schema = yaml.safe_load(APIClient().get(reverse("api:schema")).content)
    described = schema["components"]["schemas"]["Dataset"]["properties"]
    assert "trec_eval -c" in described["empty_queries"]["description"]


def test_it_leaves_unpublished_datasets_to_staff(tiny_dataset, staff):
    tiny_dataset.is_published = False
    tiny_dataset.save()
    assert APIClient().get(reverse("api:datasets")).json() == []
    as_staff = APIClient()
    as_staff.force_authenticate(staff)
    assert [d["slug"] for d in as_staff.get(reverse("api:datasets")).json()] == ["tiny"]
    response = APIClient().get(reverse("api:leaderboard", args=["tiny"]))
    assert response.status_code == 404


def test_it_serves_the_leaderboard_in_rank_order(api, alice, bob, tiny_dataset):
    weak = scored(api, WEAK, name="weak", visibility="public")
    best = scored(api, PERFECT, name="best", visibility="anonymous")
    bob_client = APIClient()
    bob_client.force_authenticate(bob)
    private = scored(bob_client, PERFECT, name="bob private", visibility="private")

    url = reverse("api:leaderboard", args=["tiny"])
    body = APIClient().get(url, {"split": "test"}).json()
    assert (body["dataset"], body["split"], body["hidden"]) == ("tiny", "test", True)
    assert body["qrels_version"] == 1
    assert body["primary_measure"] == body["sort"] == "R@10"
    assert body["scale"] == "fraction"  # scores as fractions; pages show percent
    assert body["measures"] == ["R@10", "MAP@10", "MRR@10", "nDCG@10"]
    entries = body["entries"]
    assert [e["submission_id"] for e in entries] == [best.pk, weak.pk]
    assert [e["rank"] for e in entries] == [1, 2]
    assert entries[0]["owner"] == "anonymous"
    assert entries[0]["scores"]["R@10"] == pytest.approx(1.0)
    assert private.pk not in [e["submission_id"] for e in entries]

    # The owner of the private entry sees it too, marked, sharing the first rank.
    own = bob_client.get(url).json()["entries"]
    assert [(e["submission_id"], e["rank"], e["is_private"]) for e in own] == [
        (best.pk, 1, False),
        (private.pk, 1, True),
        (weak.pk, 3, False),
    ]


def test_it_sorts_by_another_measure_and_refuses_unknown_ones(api, tiny_dataset):
    scored(api, WEAK, name="weak")
    url = reverse("api:leaderboard", args=["tiny"])
    assert APIClient().get(url, {"sort": "MRR@10"}).json()["sort"] == "MRR@10"
    response = APIClient().get(url, {"sort": "R@1000"})
    assert response.status_code == 404  # a name the dataset lacks, like a split: the message lists what it has
    assert "R@10, MAP@10" in response.json()["error"]["message"]
    assert APIClient().get(url, {"sort": ""}).status_code == 400


def test_it_answers_404_for_unknown_datasets_and_splits(tiny_dataset):
    assert APIClient().get(reverse("api:leaderboard", args=["nope"])).status_code == 404
    response = APIClient().get(reverse("api:leaderboard", args=["tiny"]), {"split": "train"})
    assert response.status_code == 404
    assert set(response.json()) == {"error"}


def test_the_schema_is_valid_openapi_listing_the_endpoints(db):
    response = APIClient().get(reverse("api:schema"))
    assert response.status_code == 200
    schema = yaml.safe_load(response.content)
    validate_schema(schema)
    assert schema["openapi"].startswith("3.")
    assert set(schema["paths"]) >= {
        "/api/v1/submissions/",
        "/api/v1/submissions/{id}/",
        "/api/v1/datasets/",
        "/api/v1/datasets/{slug}/leaderboard",
    }
    assert "post" in schema["paths"]["/api/v1/submissions/"]
    assert "tokenAuth" in schema["components"]["securitySchemes"]

    as_json = APIClient().get(reverse("api:schema"), {"format": "json"})
    assert json.loads(as_json.content)["paths"].keys() == schema["paths"].keys()


def test_the_docs_page_lists_endpoints_with_examples_and_no_cdn(db):
    response = APIClient().get(reverse("api:docs"))
    assert response.status_code == 200
    html = response.content.decode()
    for text in ("POST /api/v1/submissions/", "GET /api/v1/datasets/{slug}/leaderboard", "curl", reverse("api:schema")):
        assert text in html
    assert "run_file" in html and "system_name" in html
    assert "cdn" not in html.lower()
    # Our own static files only (the theme toggle), no inline script and nothing from another host.
    scripts = re.findall(r"<script([^>]*)>(.*?)</script>", html, flags=re.S)
    assert all(re.fullmatch(r' src="/static/[^"]+"( defer)?', attrs) and not body.strip()
               for attrs, body in scripts), scripts


def test_the_docs_page_shows_compare_and_fusion_with_curl_examples(tiny_dataset):
    html = APIClient().get(reverse("api:docs")).content.decode()
    assert "GET /api/v1/compare/" in html and "POST /api/v1/fusions/" in html  # the endpoint list, from the schema
    assert 'curl -sS "http://testserver/api/v1/compare/?submissions=42,57&amp;measure=' in html
    assert """-d '{"submissions": [42, 57], "method": "rrf", "k": 60}'""" in html
    assert "http://testserver/api/v1/fusions/" in html and 'href="#fuse"' in html and 'href="#compare"' in html
    assert "a worker fuses the runs and scores the" in html
