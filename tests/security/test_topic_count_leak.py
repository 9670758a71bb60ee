"""#24 item 2: during a shared task (a partitioned hidden split) the compare page and the dataset page's power
analysis named the evaluated topics of the public part (``ref.qids|length``, ``power.analysis.n_topics``), which
the submission page withholds (``disclosure.evaluated_count``): beside the public topics' number, it tells which
public topics have no judgment, and by difference the private part's count. Both now ask disclosure."""

from __future__ import annotations

import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from catalogue.models import Split
from catalogue.services import qrels_version_add
from submissions.services import qrels_version_publish_and_rescore, submission_create, submission_score_now

from .hidden_task import ALICE_RANKS, BOB_RANKS, QRELS, carol, run_bytes, task_world, upload  # noqa: F401

pytestmark = pytest.mark.django_db


def _q2_unjudged(world) -> Split:
    """q2, a public topic, has no judgment in the current version: 3 of the 4 public topics are evaluated."""
    version, _ = qrels_version_add(split=world.split, qrels={q: d for q, d in QRELS.items() if q != "q2"},
                                   publish=False)
    # A small change on a hidden split: published only with a curator's reason (test_qrels_batch_leak.py).
    qrels_version_publish_and_rescore(split=Split.objects.get(pk=world.split.pk), version=version,
                                      small_change_reason="errata")
    return Split.objects.get(pk=world.split.pk)


def test_compare_names_no_evaluated_count_during_the_task(task_world, alice, bob, client):  # noqa: F811
    split = _q2_unjudged(task_world)
    a = upload(alice, split, ALICE_RANKS, "a")
    b = upload(bob, split, BOB_RANKS, "b")
    assert "number of evaluated topics is not shown during the task" in client.get(
        reverse("participants:detail", args=[a.pk])).content.decode()
    page = client.get(reverse("participants:compare") + f"?ids={a.pk},{b.pk}").content.decode()
    assert "aggregates only" in page  # the comparison itself is shown
    named = re.search(r"split \(hidden labels: aggregates only\), (\d+) quer", page)
    assert named is None, named.group(0)  # was "3 queries": q2's emptiness, read by anyone
    assert "number of evaluated topics is not shown during the task" in page


def test_the_power_analysis_names_no_evaluated_count_during_the_task(task_world, django_user_model,  # noqa: F811
                                                                     client):
    split = _q2_unjudged(task_world)
    curator = django_user_model.objects.create_user("dora", "dora@example.org", "correct horse battery staple",
                                                    is_staff=True)
    for name, ranks in (("base-a", ALICE_RANKS), ("base-b", BOB_RANKS)):
        sub = submission_create(user=curator, split=split, is_baseline=True, enqueue=False,
                                upload=SimpleUploadedFile("run.txt", run_bytes(ranks, name)),
                                metadata={"system_name": name, "visibility": "public"})
        submission_score_now(sub.pk)
    page = client.get(task_world.dataset.get_absolute_url() + "?split=test").content.decode()
    assert "Statistical power" in page  # the analysis itself is shown
    assert not re.search(r"With \d+ topics", page), re.search(r"With \d+ topics", page)
    assert "number is not shown during the task" in page
