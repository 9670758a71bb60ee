"""Fixtures for the leak tests of #24: a shared task on a small hidden split, 9 topics, 4 of them public; two
teams whose runs rank differently on the public and the private topics, so a score of one part is never
mistaken for the other's. (Imported by the tests that use them: ``from .hidden_task import task_world``.)"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db.models import F
from django.utils import timezone

from campaigns.models import Phase, Team
from campaigns.services import team_create, team_join
from catalogue.models import Benchmark, Dataset, Split, Topic
from catalogue.services import corpus_set, qrels_version_add
from submissions.models import Submission
from submissions.services import submission_create, submission_score_now

QIDS = [f"q{i}" for i in range(1, 10)]
PUBLIC = ["q1", "q2", "q3", "q4"]
PRIVATE = ["q5", "q6", "q7", "q8", "q9"]
QRELS = {q: {f"d{i}": 1} for i, q in enumerate(QIDS, start=1)}
#: Rank of each topic's relevant document in a run (0: not in the run's top 10).
#: alice: public R@10 0.75, private 1.0, all 0.8889; bob: public 1.0, private 0.2, all 0.5556.
ALICE_RANKS = {"q1": 1, "q2": 2, "q3": 3, "q4": 0, "q5": 1, "q6": 1, "q7": 4, "q8": 5, "q9": 7}
BOB_RANKS = {"q1": 1, "q2": 1, "q3": 1, "q4": 1, "q5": 3, "q6": 0, "q7": 0, "q8": 0, "q9": 0}


def run_bytes(ranks: dict[str, int], tag: str) -> bytes:
    """Ten documents per topic; the topic's relevant document at ``ranks[qid]`` (0: absent)."""
    lines = []
    for i, qid in enumerate(QIDS, start=1):
        filler = iter(f"d{n}" for n in range(20, 99) if n != i)
        for rank in range(1, 11):
            doc = f"d{i}" if rank == ranks[qid] else next(filler)
            lines.append(f"{qid} Q0 {doc} {rank} {20 - rank} {tag}")
    return ("\n".join(lines) + "\n").encode()


def upload(user, split: Split, ranks: dict[str, int], name: str, *, score: bool = True, **metadata) -> Submission:
    submission = submission_create(
        user=user, split=split, upload=SimpleUploadedFile("run.txt", run_bytes(ranks, name.replace(" ", "-"))),
        metadata={"system_name": name, "visibility": "public", **metadata}, enqueue=False)
    return submission_score_now(submission.pk) if score else submission


@dataclass
class TaskWorld:
    dataset: Dataset
    split: Split
    phase: Phase
    red: Team  # alice (and carol)
    blue: Team  # bob


@pytest.fixture
def carol(django_user_model):
    from tests.users import verified

    return verified(django_user_model.objects.create_user("carol", "carol@example.org", "correct horse battery staple"))


@pytest.fixture
def task_world(db, alice, bob, carol, private_run_storage, own_cache_namespace) -> TaskWorld:
    bench = Benchmark.objects.create(slug="coliee", name="COLIEE")
    dataset = Dataset.objects.create(benchmark=bench, slug="coliee-t3", name="COLIEE Task 3", language="en",
                                     docid_example="d1", measures=["R@10", "MRR@10", "nDCG@10"],
                                     primary_measure="R@10")
    corpus_set(dataset=dataset, ids=[f"d{i}" for i in range(1, 100)])
    split = Split.objects.create(dataset=dataset, name="test", kind="test", hidden=True, min_coverage=0.5,
                                 ladder=False, daily_limit=0, total_limit=0)
    for qid in QIDS:
        Topic.objects.create(split=split, qid=qid, text=f"Question {qid}?", category="civil")
    qrels_version_add(split=split, qrels=QRELS)
    now = timezone.now()
    phase = Phase.objects.create(split=split, title="COLIEE 2027 Task 3", opens_at=now - timedelta(days=1),
                                 closes_at=now + timedelta(days=2), time_zone="Europe/Brussels", daily_cap=3,
                                 total_cap=10, max_final_runs=2, public_share=0.45, public_qids=PUBLIC)
    red = team_create(phase=phase, user=alice, name="Red")
    team_join(token=red.invite_token, user=carol)
    blue = team_create(phase=phase, user=bob, name="Blue")
    return TaskWorld(dataset, Split.objects.get(pk=split.pk), phase, red, blue)


def close(phase: Phase, *, seconds_ago: int = 1) -> Phase:
    """Move the phase's close into the past (the opening three days before); the runs sent so far move an hour
    back, so they were sent before the close whatever ``seconds_ago``."""
    now = timezone.now()
    Submission.objects.filter(split_id=phase.split_id).update(created_at=F("created_at") - timedelta(hours=1))
    Phase.objects.filter(pk=phase.pk).update(closes_at=now - timedelta(seconds=seconds_ago),
                                             opens_at=now - timedelta(days=3))
    phase.refresh_from_db()
    return phase
