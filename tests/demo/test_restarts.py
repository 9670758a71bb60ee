"""Restarts keep a curator's work: the steps of ``make run`` run twice with curator work between change none of it.

``scripts/run.sh`` runs ``load_cards``, ``load_demo`` and ``ensure_local_admin`` at every start, and the README says
running it again is safe. Between two starts a curator publishes an assessor's qrels v2 of the demo's hidden split
(rescored), unpublishes a dataset and publishes a draft one, edits a card's dataset, the demo's description and
some of its topics (a question reworded, a category emptied, an example's text), opens a shared task, makes a
baseline private and changes a split's caps; the second start must leave every row of that as it was.
"""

from __future__ import annotations

import io
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from campaigns.models import Phase, Team
from campaigns.services import team_create
from catalogue.models import Benchmark, Dataset, DataTerms, QrelsVersion, ReportedResult, Split, Topic
from catalogue.services import data_terms_publish, dataset_get_or_create, qrels_version_add
from submissions.models import Result, Submission
from submissions.services import qrels_version_publish_and_rescore
from submissions.services.rescoring import submission_rescore_on

from .conftest import TEST_DEPTH

# Each test loads the demo (about 2-3 s each, docs/testing.md).
pytestmark = [pytest.mark.django_db, pytest.mark.slow]


def start() -> str:
    """What ``scripts/run.sh`` runs before it serves (migrations aside)."""
    out = io.StringIO()
    call_command("load_cards", stdout=out)
    call_command("load_demo", "--depth", str(TEST_DEPTH), stdout=out)
    call_command("ensure_local_admin", stdout=out)
    return out.getvalue()


def snapshot() -> dict:
    """Every row a curator can change, field by field (the split's cache counter aside: it only grows)."""
    return {
        "benchmarks": list(Benchmark.objects.order_by("pk").values()),
        "datasets": list(Dataset.objects.order_by("pk").values()),
        "splits": list(Split.objects.order_by("pk").values(*[f.attname for f in Split._meta.concrete_fields
                                                             if f.name != "cache_version"])),
        "qrels": list(QrelsVersion.objects.order_by("pk").values("pk", "split_id", "version", "sha256", "note")),
        "submissions": list(Submission.objects.order_by("pk").values(
            "pk", "split_id", "system_name", "visibility", "status", "withdrawn_at", "sha256")),
        "results": list(Result.objects.order_by("pk").values("pk", "submission_id", "qrels_version_id", "scores")),
        "phases": list(Phase.objects.order_by("pk").values()),
        "teams": list(Team.objects.order_by("pk").values("pk", "phase_id", "name")),
        "reported": list(ReportedResult.objects.order_by("pk").values()),
        "terms": list(DataTerms.objects.order_by("pk").values("pk", "dataset_id", "version", "title", "text")),
        "topics": list(Topic.objects.order_by("pk").values()),
    }


def curator_work() -> None:
    demo = Dataset.objects.get(slug="demo")
    test = demo.splits.get(name="test")
    # An assessor's judgments, published as v2 and rescored (the workers' part done here, synchronously).
    qrels: dict[str, dict[str, int]] = {}
    for line in QrelsVersion.objects.get(pk=test.current_qrels_id).text().splitlines():
        q, _, doc, grade = line.split()
        qrels.setdefault(q, {})[doc] = int(grade)
    qid = sorted(qrels)[0]
    qrels[qid] = {**qrels[qid], "1": 2, "2": 1}
    version, created = qrels_version_add(split=test, qrels=qrels, note="assessor's pool, round 1")
    assert created and version.version == 2
    assert qrels_version_publish_and_rescore(split=test, version=version,
                                             small_change_reason="a curator's errata") > 0
    test.refresh_from_db()
    for pk in Submission.objects.filter(split=test, status=Submission.Status.SCORED).values_list("pk", flat=True):
        assert submission_rescore_on(submission_id=pk, qrels_version_id=version.pk) == "stored"
    test.refresh_from_db()
    assert test.current_qrels_id == version.pk and test.pending_qrels_id is None
    # Visibility: the classification demo taken off the site, an imported draft published, a baseline made private.
    Dataset.objects.filter(slug="demo-areas").update(is_published=False)
    draft, _ = dataset_get_or_create(slug="mine", name="My set", benchmark_slug="mine", benchmark_name="Mine",
                                     language="fr")
    Dataset.objects.filter(pk=draft.pk).update(is_published=True)
    Submission.objects.filter(split=test, system_name="Random").update(visibility=Submission.Visibility.PRIVATE)
    # The classification demo's data terms rewritten by a curator (version 2).
    data_terms_publish(dataset=Dataset.objects.get(slug="demo-areas"), title="Our terms", text="Cite us.")
    # A card's dataset edited, a split's caps changed, a shared task opened with a team.
    Dataset.objects.filter(slug="bsard").update(description="Edited by a curator.")
    # The demo's own texts and topics edited in the admin: a question reworded, another's category emptied.
    Dataset.objects.filter(slug="demo").update(description="The demo, described by a curator.")
    dev_topics = Topic.objects.filter(split__dataset=demo, split__name="dev").order_by("qid")
    Topic.objects.filter(pk=dev_topics[0].pk).update(text="A curator's rewording?", category="Edited")
    Topic.objects.filter(pk=dev_topics[1].pk).update(category="", subcategory="")
    Topic.objects.filter(pk=test.topics.order_by("qid")[0].pk).update(text="A hidden question, reworded?")
    example = Topic.objects.filter(split__dataset__slug="demo-areas").order_by("pk").first()
    Topic.objects.filter(pk=example.pk).update(text="An example's text, fixed by a curator.")
    Split.objects.filter(pk=demo.splits.get(name="dev").pk).update(daily_limit=2, total_limit=9)
    task = Split.objects.create(dataset=demo, name="task", kind="test", hidden=True, min_coverage=0, ladder=False)
    now = timezone.now()
    phase = Phase.objects.create(split=task, title="Demo task", opens_at=now - timedelta(days=1),
                                 closes_at=now + timedelta(days=7))
    team_create(phase=phase, user=Submission.objects.first().user, name="Baseliners")


def test_a_second_start_changes_nothing_of_a_curators_work(private_storage):
    start()
    curator_work()
    before = snapshot()
    out = start()
    after = snapshot()
    for table in before:
        assert after[table] == before[table], f"the second start changed {table}"
    assert "unchanged" in out
    assert Dataset.objects.get(slug="demo").description == "The demo, described by a curator."
    assert Topic.objects.filter(text="A curator's rewording?", category="Edited").count() == 1
    # Nothing hidden: the start says the rows differ from the generator's and were left as they are.
    assert "split dev: 2 topics already in the split differ from these files and were left as they are" \
        in out, out


def test_a_second_start_with_nothing_between_changes_nothing(private_storage):
    start()
    before = snapshot()
    start()
    assert snapshot() == before
