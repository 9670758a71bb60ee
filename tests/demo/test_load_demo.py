"""``manage.py load_demo``: the demo in the database, baselines scored like uploads, idempotent."""

from __future__ import annotations

import copy
import io
import uuid

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from assessment.models import Pool
from catalogue.models import Benchmark, Corpus, Dataset, QrelsVersion, Split, Topic
from submissions.models import Result, StatusEvent, Submission

from .conftest import TEST_DEPTH

# Each test loads the demo (about 2-3 s each, docs/testing.md).
pytestmark = [pytest.mark.django_db, pytest.mark.slow]


def load(*args: str) -> str:
    out = io.StringIO()
    call_command("load_demo", "--depth", str(TEST_DEPTH), *args, stdout=out)
    return out.getvalue()


def counts() -> dict[str, int]:
    models = [Benchmark, Dataset, Split, Topic, Corpus, QrelsVersion, Submission, Result, get_user_model()]
    return {m.__name__: m.objects.count() for m in models}


def test_it_loads_the_dataset_with_public_dev_and_hidden_test(private_storage):
    out = load()
    ds = Dataset.objects.get(slug="demo")
    assert ds.benchmark.slug == "demo" and ds.benchmark.name == "Lexboard demo suite"
    assert ds.name == "Demo statutory retrieval"
    assert "harmonic mean" in ds.benchmark.description and "R@100" in ds.benchmark.description
    assert "macro-F1 of the demo legal area classification" in ds.benchmark.description
    assert ds.measures == ["R@10", "R@100", "MAP@100", "MRR@100", "nDCG@10"]
    assert ds.primary_measure == "R@100" and ds.docid_example == "1234"
    ds.full_clean()
    assert ds.corpus.n_documents == 2000
    splits = {s.name: s for s in ds.splits.all()}
    assert not splits["dev"].hidden and splits["test"].hidden
    for split in splits.values():
        assert split.topics.count() == 100
        assert split.current_qrels is not None and split.current_qrels.n_topics == 100
        assert split.topics.exclude(category="").count() == 100
    assert "demo: 2,000 articles, 200 questions (dev 100, test 100)" in out
    assert "BM25 R@100=" in out and "Random R@100=" in out


def test_the_baselines_are_scored_submissions_of_a_system_account(private_storage):
    load()
    bot = get_user_model().objects.get(username="lexboard-baselines")
    assert not bot.has_usable_password()
    subs = Submission.objects.filter(split__dataset__slug="demo")
    assert subs.count() == 6
    assert set(subs.values_list("system_name", flat=True)) == {"BM25 (bm25s, French stemmer)", "TF-IDF", "Random"}
    for sub in subs:
        assert sub.user == bot and sub.is_baseline and sub.status == Submission.Status.SCORED
        assert sub.is_public
        # Scored through the same path as an upload: claimed (a status event), a stored file, one result.
        assert StatusEvent.objects.filter(submission=sub, status=Submission.Status.SCORED).exists()
        assert sub.checksum_file() == sub.sha256
        result = sub.results.get(qrels_version=sub.split.current_qrels)
        assert set(result.scores) == set(sub.split.dataset.measures)
        assert result.primary_score == result.scores["R@100"]
    assert {s.family for s in subs.filter(system_name="TF-IDF")} == {"lexical"}


@pytest.mark.parametrize("split_name", ["dev", "test"])
def test_bm25_beats_random_on_the_leaderboard(private_storage, split_name):
    from leaderboard.selectors import leaderboard_rows
    from submissions import disclosure

    load()
    split = Split.objects.get(dataset__slug="demo", name=split_name)
    rows = leaderboard_rows(split=split)
    baselines = {r.system: r for r in rows if r.kind == "baseline"}
    assert set(baselines) == {"BM25 (bm25s, French stemmer)", "TF-IDF", "Random"}
    bm25, rand = baselines["BM25 (bm25s, French stemmer)"], baselines["Random"]
    assert bm25.rank == 1
    # The board shows what the split releases: every measure on dev, the primary one (on the grid) on hidden test.
    measures = disclosure.released_measures(split)
    assert measures == (list(split.dataset.measures) if split_name == "dev" else [split.dataset.primary_measure])
    for row in (bm25, rand):
        assert set(row.scores) == set(measures)
    for name in measures:
        assert bm25.scores[name] > 3 * rand.scores[name]


def test_loading_twice_creates_no_duplicates(private_storage):
    load()
    before = counts()
    results = dict(Result.objects.values_list("submission_id", "created_at"))
    out = load()
    assert counts() == before
    assert dict(Result.objects.values_list("submission_id", "created_at")) == results
    assert "6 unchanged, 0 uploaded or rescored" in out
    assert "nothing was written" in out


def test_force_baselines_rescores_the_same_submissions(private_storage):
    load()
    before = counts()
    scored_at = dict(Submission.objects.values_list("pk", "scored_at"))
    out = load("--force-baselines")
    assert counts() == before
    after = dict(Submission.objects.values_list("pk", "scored_at"))
    assert set(after) == set(scored_at) and all(after[pk] > scored_at[pk] for pk in after)
    assert Submission.objects.exclude(status=Submission.Status.SCORED).count() == 0
    assert "6 uploaded or rescored" in out


def test_a_changed_run_replaces_the_baseline_and_withdraws_the_old_one(private_storage):
    load()
    # The retrieval dataset's runs (the demo suite's classification baselines do not depend on --depth).
    retrieval = Submission.objects.filter(split__dataset__slug="demo")
    old = set(retrieval.values_list("pk", flat=True))
    out = io.StringIO()
    call_command("load_demo", "--depth", "50", stdout=out)
    assert retrieval.count() == 12
    assert set(Submission.objects.filter(withdrawn_at__isnull=False).values_list("pk", flat=True)) == old
    live = retrieval.filter(withdrawn_at=None)
    assert live.count() == 6 and all(s.status == Submission.Status.SCORED for s in live)


def test_it_keeps_what_a_curator_changed(private_storage):
    load("--no-baselines")
    Dataset.objects.filter(slug="demo").update(description="Edited by a curator.")
    topic = Topic.objects.filter(split__dataset__slug="demo", split__name="dev").order_by("qid").first()
    Topic.objects.filter(pk=topic.pk).update(text="Reworded by a curator?", category="Edited", subcategory="")
    Topic.objects.filter(split__dataset__slug="demo", split__name="test", qid="101").delete()
    out = load("--no-baselines")
    assert Dataset.objects.get(slug="demo").description == "Edited by a curator."
    edited = Topic.objects.get(pk=topic.pk)
    assert (edited.text, edited.category, edited.subcategory) == ("Reworded by a curator?", "Edited", "")
    assert Topic.objects.filter(split__dataset__slug="demo", split__name="test", qid="101").exists()  # made again
    assert "split dev: 1 topic already in the split differs from these files and was left as it is" in out, out
    assert Submission.objects.count() == 0


def test_an_older_install_gets_the_suite_name_unless_a_curator_renamed_it(private_storage):
    load("--no-baselines")
    old_description = "A benchmark generated by code, so the product demonstrates itself on a fresh machine."
    Benchmark.objects.filter(slug="demo").update(name="Demo statutory retrieval", description=old_description)
    load("--no-baselines")
    benchmark = Benchmark.objects.get(slug="demo")
    assert benchmark.name == "Lexboard demo suite" and "harmonic mean" in benchmark.description
    Benchmark.objects.filter(slug="demo").update(name="Our demo", description="Edited by a curator.")
    load("--no-baselines")
    benchmark = Benchmark.objects.get(slug="demo")
    assert (benchmark.name, benchmark.description) == ("Our demo", "Edited by a curator.")


def test_the_dataset_page_shows_the_baselines_after_loading(private_storage, client, settings):
    from django.urls import reverse

    # A key prefix of our own: ids repeat across tests, and clearing a shared Redis would hurt others.
    caches = copy.deepcopy(settings.CACHES)
    caches["default"]["KEY_PREFIX"] = f"test-demo-{uuid.uuid4().hex[:12]}"
    settings.CACHES = caches
    load()
    page = client.get(reverse("leaderboard:dataset", args=["demo"]) + "?split=dev")
    assert page.status_code == 200
    html = page.content.decode()
    for system in ("BM25 (bm25s, French stemmer)", "TF-IDF", "Random"):
        assert system in html
    home = client.get(reverse("leaderboard:home"))
    assert home.status_code == 200 and "Demo statutory retrieval" in home.content.decode()


def test_it_makes_an_assessor_and_a_small_pool_assigned_to_it(private_storage):
    out = load()
    assessor = get_user_model().objects.get(username="assessor")
    assert assessor.groups.filter(name="assessors").exists() and assessor.has_usable_password()
    pool = Pool.objects.get(split__dataset__slug="demo", split__name="test")
    first_five = set(pool.split.topics.order_by("qid").values_list("qid", flat=True)[:5])
    assert set(pool.items.values_list("qid", flat=True)) <= first_five
    assert 0 < pool.items.count() <= 5 * 5 * 3 and pool.assignments.get().assessor == assessor
    assert pool.items.exclude(doc_text="").count() == pool.items.count()  # the articles' text, for reading
    assert "password:" in out and "assessment: Demo pool" in out
    again = load()
    assert "password:" not in again and "(unchanged)" in again and Pool.objects.count() == 1
