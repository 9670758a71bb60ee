"""POST and GET /api/v1/submissions/: uploads by token, the error shape, who sees what."""

import gzip
import io

import pytest
from django.test import override_settings
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.models import ApiToken
from api.errors import ApiError
from api.submissions import _split_or_error
from catalogue.models import Dataset, Split
from submissions.models import Submission
from submissions.selectors import month_bounds
from submissions.services import submission_score_now
from submissions.throttling import upload_limiter

from .conftest import PERFECT, WEAK, run_bytes

pytestmark = pytest.mark.django_db


def upload(api, content: bytes, *, name="run.txt", **fields):
    data = {"dataset": "tiny", "system_name": "BM25", "run_file": io.BytesIO(content)}
    data["run_file"].name = name
    data.update(fields)
    return api.post(reverse("api:submissions"), data, format="multipart")


def assert_error_shape(body: dict) -> dict:
    assert set(body) == {"error"}
    error = body["error"]
    assert isinstance(error["message"], str) and error["message"]
    assert isinstance(error["details"], list)
    for detail in error["details"]:
        assert {"line", "reason"} <= set(detail)
    return error


def test_it_accepts_a_run_with_a_token_and_queues_it(api, alice, tiny_dataset, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = upload(api, run_bytes(PERFECT), family="lexical", description="k1=0.9")
    assert response.status_code == 202, response.content
    body = response.json()
    submission = Submission.objects.get(pk=body["id"])
    assert body["status"] == "queued" == submission.status
    assert body["url"] == f"http://testserver/api/v1/submissions/{submission.pk}/"
    assert response["Location"] == body["url"]
    assert submission.user == alice
    assert submission.split.name == "test"  # the dataset's hidden test split by default
    assert (submission.system_name, submission.family, submission.description) == ("BM25", "lexical", "k1=0.9")
    assert len(callbacks) == 1  # the scoring task is sent after commit


def test_it_accepts_a_gzipped_run_for_a_named_split(api, tiny_dataset):
    response = upload(api, gzip.compress(run_bytes(PERFECT)), name="run.txt.gz", split="dev")
    assert response.status_code == 202, response.content
    assert Submission.objects.get(pk=response.json()["id"]).split.name == "dev"


def test_it_refuses_a_bad_file_with_line_details(api, tiny_dataset):
    content = b"q1 Q0 d1 1 10.0 sys\nq1 Q0 d2 2\nq2 Q0 d3 1 nan sys\n"
    response = upload(api, content)
    assert response.status_code == 400
    error = assert_error_shape(response.json())
    lines = {d["line"] for d in error["details"]}
    assert 2 in lines
    assert not Submission.objects.exists()


def test_it_groups_one_reason_of_5000_comma_separated_lines(api, tiny_dataset):
    content = "".join(f"q{i % 3 + 1},Q0,d{i},{i // 3 + 1},{1 - i / 10000},sys\n" for i in range(5000)).encode()
    response = upload(api, content)
    assert response.status_code == 400
    error = assert_error_shape(response.json())
    assert len(error["details"]) == 1, error["details"][:3]
    detail = error["details"][0]
    assert (detail["count"], detail["line"], detail["lines"][:3]) == (5000, 1, [1, 2, 3])
    assert "q1,Q0,d0" in detail["reason"]  # the first line's own reason, as before
    message = error["message"]
    assert "all 5,000 lines: comma- or semicolon-separated — use spaces or tabs" in message, message
    assert "(lines 1, 2, 3, …)" in message and len(message) < 400, message
    assert not Submission.objects.exists()


def test_it_gives_one_entry_per_kind_of_problem(api, tiny_dataset):
    rows = []
    for i in range(300):
        if i % 3 == 0:
            rows.append(f"q1,Q0,d{i},1,0.5,sys")
        elif i % 3 == 1:
            rows.append(f"q2 Q0 d{i} 1 x{i} sys")
        else:
            rows.append(f"q3 Q0 d{i} {i} 0.5 sys")
    response = upload(api, ("\n".join(rows) + "\n").encode())
    assert response.status_code == 400
    error = assert_error_shape(response.json())
    assert [(d["count"], d["lines"][:2]) for d in error["details"]] == [(100, [1, 4]), (100, [2, 5])]
    assert "'x1'" in error["details"][1]["reason"]  # the first bad score's own words
    assert "2 kinds of problem on 200 of 300 lines" in error["message"], error["message"]


def test_it_refuses_a_wrong_docid_scheme_naming_the_datasets(api, tiny_dataset):
    response = upload(api, run_bytes({"q1": ["CivC::11", "CivC::12"], "q2": ["CivC::13"]}))
    assert response.status_code == 400
    error = assert_error_shape(response.json())
    assert "d1" in error["message"]  # the dataset's docid example
    assert error["details"][0]["line"] == 1


def test_it_lists_missing_fields(api, tiny_dataset):
    response = api.post(reverse("api:submissions"), {"dataset": "tiny"}, format="multipart")
    assert response.status_code == 400
    error = assert_error_shape(response.json())
    reasons = " ".join(d["reason"] for d in error["details"])
    assert "run_file" in reasons and "system_name" in reasons


def test_it_answers_404_for_an_unknown_dataset_or_split(api, tiny_dataset):
    response = upload(api, run_bytes(PERFECT), dataset="nope")
    assert response.status_code == 404
    assert "nope" in assert_error_shape(response.json())["message"]
    response = upload(api, run_bytes(PERFECT), split="train")
    assert response.status_code == 404
    assert "test" in assert_error_shape(response.json())["message"]  # names the splits there are


@pytest.mark.parametrize(("slug", "split_name", "as_staff"), [
    ("tiny", None, False), ("tiny", "dev", False), ("tiny", "test", False), ("tiny", "train", False),
    ("nope", None, False), ("hidden", None, False), ("hidden", "dev", True), ("hidden", "train", True),
    ("hidden", None, True), ("hidden", "nope", True), ("plain", None, False), ("plain", "nope", False),
    ("bare", None, True), ("bare", "dev", True),
])
def test_an_upload_finds_the_split_a_page_finds(tiny_dataset, alice, staff, slug, split_name, as_staff):
    """The upload's lean lookup (``dataset_for_upload``) and the page's (``dataset_for_page``): the same split,
    or the same 404 and message (which lists the splits in their order), for a named or a default split, an unknown
    dataset or split, an unpublished dataset (refused but to staff), a dataset without splits."""
    hidden = Dataset.objects.create(benchmark=tiny_dataset.benchmark, slug="hidden", name="Hidden", is_published=False)
    for name, kind in (("train", "train"), ("dev", "dev"), ("b-test", "test"), ("a-test", "test")):
        Split.objects.create(dataset=hidden, name=name, kind=kind)
    plain = Dataset.objects.create(benchmark=tiny_dataset.benchmark, slug="plain", name="Plain")
    for name, kind in (("z-dev", "dev"), ("a-train", "train")):  # no test split: the first in the splits' order
        Split.objects.create(dataset=plain, name=name, kind=kind)
    Dataset.objects.create(benchmark=tiny_dataset.benchmark, slug="bare", name="Bare")
    user = staff if as_staff else alice

    def found(upload):
        try:
            return _split_or_error(slug, split_name, user=user, upload=upload).pk
        except ApiError as exc:
            return exc.status_code, exc.message
    assert found(upload=True) == found(upload=False)


def test_it_refuses_uploads_without_a_valid_token(tiny_dataset, alice):
    anonymous = APIClient()
    response = upload(anonymous, run_bytes(PERFECT))
    assert response.status_code == 401
    assert "Token" in assert_error_shape(response.json())["message"]
    assert response["WWW-Authenticate"] == "Token"

    wrong = APIClient()
    wrong.credentials(HTTP_AUTHORIZATION="Token lxb_not-a-real-key")
    response = upload(wrong, run_bytes(PERFECT))
    assert response.status_code == 401
    assert_error_shape(response.json())
    assert not Submission.objects.exists()


def test_it_accepts_bearer_tokens(alice, tiny_dataset):
    _, key = ApiToken.issue(user=alice)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    assert upload(client, run_bytes(PERFECT)).status_code == 202
    assert ApiToken.objects.get(prefix=key[:12]).last_used_at is not None


def test_a_token_used_again_within_the_minute_is_not_written_again(alice, db):
    from datetime import timedelta

    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    token, key = ApiToken.issue(user=alice)
    first = ApiToken.authenticate(key).last_used_at
    assert first is not None
    with CaptureQueriesContext(connection) as queries:
        assert ApiToken.authenticate(key).last_used_at == first
    assert not [q for q in queries.captured_queries if q["sql"].startswith("UPDATE")], queries.captured_queries
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=first - timedelta(seconds=61))
    assert ApiToken.authenticate(key).last_used_at > first  # a minute on: brought up to date
    assert ApiToken.objects.get(pk=token.pk).last_used_at > first


def test_it_refuses_a_session_post_without_csrf(client, alice, tiny_dataset):
    client.force_login(alice)
    csrf_client = client.__class__(enforce_csrf_checks=True)
    csrf_client.force_login(alice)
    data = {"dataset": "tiny", "system_name": "x", "run_file": io.BytesIO(run_bytes(PERFECT))}
    data["run_file"].name = "run.txt"
    response = csrf_client.post(reverse("api:submissions"), data)
    assert response.status_code == 403
    assert "CSRF" in assert_error_shape(response.json())["message"]


@override_settings(LEXBOARD_UPLOAD_RATE="2/h")
def test_it_throttles_uploads_with_429(api, alice, tiny_dataset):
    tiny_dataset.splits.update(daily_limit=0, total_limit=0)
    for i in range(2):
        assert upload(api, run_bytes(PERFECT, tag=f"sys{i}")).status_code == 202
    response = upload(api, run_bytes(PERFECT, tag="sys3"))
    assert response.status_code == 429
    assert "Too many uploads" in assert_error_shape(response.json())["message"]
    assert int(response["Retry-After"]) > 0
    # The browser form counts in the same place: a user cannot double the rate by switching.
    assert not upload_limiter().peek(f"user:{alice.pk}").allowed


def test_it_answers_429_with_the_next_allowed_time_when_the_quota_is_used(api, tiny_dataset):
    tiny_dataset.splits.filter(name="test").update(daily_limit=1)
    assert upload(api, run_bytes(PERFECT)).status_code == 202
    response = upload(api, run_bytes(PERFECT))
    assert response.status_code == 429
    error = assert_error_shape(response.json())
    assert error["retry_at"]
    assert int(response["Retry-After"]) > 0


# --- reading -----------------------------------------------------------------------------


def scored(api, ranking, **fields) -> Submission:
    response = upload(api, run_bytes(ranking), **fields)
    assert response.status_code == 202, response.content
    return submission_score_now(response.json()["id"])


def test_it_shows_status_and_aggregate_scores(api, tiny_dataset):
    submission = scored(api, PERFECT)
    assert submission.status == "scored"
    body = api.get(reverse("api:submission", args=[submission.pk])).json()
    assert body["id"] == submission.pk and body["status"] == "scored" and body["progress"] == 1.0
    assert (body["dataset"], body["split"], body["system_name"]) == ("tiny", "test", "BM25")
    assert body["scores"]["R@10"] == pytest.approx(1.0)
    # A hidden split releases its primary measure only, on its grid (submissions.disclosure), and says so.
    assert set(body["scores"]) == {"R@10"} and body["grid"] == 0.5 and body["scores_are"].startswith("fractions")
    assert body["error"] is None and isinstance(body["warnings"], list)
    assert body["created_at"] and body["scored_at"]
    assert body["qrels_version"] == 1
    text = api.get(reverse("api:submission", args=[submission.pk])).content.decode()
    # no per-query values on a hidden split (the key, not the metadata fields named "…_per_query")
    assert '"per_query"' not in text and '"q1"' not in text


def test_it_shows_a_failure_with_its_lines_to_the_owner_only(api, tiny_dataset, bob):
    response = upload(api, run_bytes(PERFECT), visibility="public")
    submission = Submission.objects.get(pk=response.json()["id"])
    details = [{"line": 7, "reason": "duplicate document d1 for query q1"}]
    assert submission.mark_failed(kind="input", message="The run has 1 problem.", details=details)
    body = api.get(reverse("api:submission", args=[submission.pk])).json()
    assert body["status"] == "failed"
    assert body["error"] == {"message": "The run has 1 problem.", "details": details}
    other = APIClient()
    other.force_authenticate(bob)
    assert other.get(reverse("api:submission", args=[submission.pk])).json()["error"]["details"] == []


def test_it_hides_another_users_private_submission_as_not_found(api, tiny_dataset, bob):
    response = upload(api, run_bytes(PERFECT), visibility="private")
    pk = response.json()["id"]
    assert api.get(reverse("api:submission", args=[pk])).status_code == 200  # the owner sees it

    for viewer in (APIClient(), _as(bob)):
        hidden = viewer.get(reverse("api:submission", args=[pk]))
        missing = viewer.get(reverse("api:submission", args=[pk + 1000]))
        assert hidden.status_code == missing.status_code == 404
        assert hidden.json() == missing.json()  # existence is not revealed
        assert_error_shape(hidden.json())


def test_anyone_reads_a_public_submission(api, tiny_dataset):
    pk = upload(api, run_bytes(PERFECT), visibility="public").json()["id"]
    assert APIClient().get(reverse("api:submission", args=[pk])).status_code == 200


def test_staff_read_private_submissions(api, tiny_dataset, staff):
    pk = upload(api, run_bytes(PERFECT), visibility="private").json()["id"]
    assert _as(staff).get(reverse("api:submission", args=[pk])).status_code == 200


def test_it_lists_only_the_callers_own_submissions(api, tiny_dataset, bob):
    mine = [upload(api, run_bytes(PERFECT, tag=v), visibility=v).json()["id"] for v in ("public", "private")]
    theirs = _as(bob)
    upload(theirs, run_bytes(PERFECT), visibility="public")
    body = api.get(reverse("api:submissions"), {"mine": 1}).json()
    assert body["count"] == 2
    assert sorted(item["id"] for item in body["results"]) == sorted(mine)
    assert APIClient().get(reverse("api:submissions"), {"mine": 1}).status_code == 401


def _as(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_it_answers_json_even_to_a_browser(tiny_dataset):
    response = APIClient().get(reverse("api:datasets"), HTTP_ACCEPT="text/html,application/xhtml+xml,*/*;q=0.8")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/json")


def test_it_refuses_a_run_of_no_topic_of_the_split_and_the_same_content_twice(api, tiny_dataset):
    response = upload(api, run_bytes({"x1": ["d1"], "x2": ["d2"]}), split="dev")
    assert response.status_code == 400
    error = assert_error_shape(response.json())
    assert "not in this split" in error["message"]
    assert error["details"][0]["line"] == 1

    assert upload(api, run_bytes(PERFECT), split="dev").status_code == 202
    response = upload(api, gzip.compress(run_bytes(PERFECT)), name="again.gz", split="dev")
    assert response.status_code == 400
    error = assert_error_shape(response.json())
    assert "same content as your entry #" in error["message"]
    assert Submission.objects.count() == 1


def test_it_refuses_a_probe_of_a_hidden_split_under_the_coverage_rule(api, tiny_dataset):
    response = upload(api, run_bytes({"q1": ["d1", "d2"]}))
    assert response.status_code == 400
    error = assert_error_shape(response.json())
    assert "1 of the split's 4 topics" in error["message"]
    assert not Submission.objects.exists()


def test_uploads_left_has_the_month_and_a_full_month_answers_429_until_the_first(api, tiny_dataset):
    tiny_dataset.splits.filter(name="test").update(daily_limit=0, total_limit=0, monthly_limit=1)
    left = {s["name"]: s for s in api.get("/api/v1/datasets/tiny/").json()["splits"]}
    assert left["test"]["monthly_limit"] == 1 and left["test"]["uploads_left"]["month"] == 1
    assert left["dev"]["monthly_limit"] is None and left["dev"]["uploads_left"]["month"] is None
    assert upload(api, run_bytes(PERFECT)).status_code == 202
    _, end = month_bounds(timezone.now())
    left = {s["name"]: s["uploads_left"] for s in api.get("/api/v1/datasets/tiny/").json()["splits"]}
    assert left["test"]["month"] == 0
    assert left["test"]["next_allowed_at"].startswith(f"{end:%Y-%m-%d}T00:00:00")
    response = upload(api, run_bytes(WEAK))
    assert response.status_code == 429
    error = assert_error_shape(response.json())
    assert "this calendar month (UTC)" in error["message"] and error["retry_at"].startswith(f"{end:%Y-%m-%d}")
