"""#37 item 2: the private board goes through the disclosure owner, and no value released after a shared task's close
differences against one released during it.

* The board ranked a team's final (or latest) runs whether or not the Ladder released them, and printed every
  measure of the hidden split: a run the Ladder held back (its public part no better) put its private mean on the
  board. Now: the runs the team marked final (at most five), else its latest runs the Ladder released; the primary
  measure only, on the private part's grid; one ledger entry (kind ``reveal``) per team row.
* A run of the task re-sent after the close with its tag changed was scored on all topics: with its public-part
  value shown during the task, its private mean. Now refused as the same run, whatever its tag and whoever sends it.
* A baseline scored during the task showed its public part, then all topics after the reveal: private =
  (N F − Npub P) / Npriv (3F − 2P here).
* The board's exports: columns and captions true of what they hold.

Through the real services and the API (Django's test client); a hidden split of 30 topics, the Ladder on: 20
public, so that a run finding 15 of them is a clear improvement over an empty run for the noisy margin (net 15
against a margin of 8, give or take Laplace noise of scale 1), and 10 private.
"""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from campaigns.models import Phase, PrivateBoard
from campaigns.services import team_create
from catalogue.models import Benchmark, Dataset, Split, Topic
from catalogue.services import corpus_set, qrels_version_add
from leaderboard.private_board import phase_reveal
from submissions.errors import UploadRefused
from submissions.models import Release, Submission
from submissions.services import submission_create, submission_score_now
from tests.campaigns.conftest import close

pytestmark = pytest.mark.django_db

QIDS = [f"q{i:02d}" for i in range(1, 31)]
PUBLIC = QIDS[:20]
PRIVATE = QIDS[20:]
MEASURES = ["R@10", "MRR@10", "nDCG@10"]


def _run(found: set[str], tag: str) -> bytes:
    """Ten documents per topic; the topic's relevant document first for the topics in ``found``."""
    lines = []
    for q in QIDS:
        docs = ([f"rel-{q}"] if q in found else []) + [f"d{n}" for n in range(1, 11)]
        lines += [f"{q} Q0 {d} {r} {20 - r} {tag}" for r, d in enumerate(docs[:10], start=1)]
    return ("\n".join(lines) + "\n").encode()


def _upload(user, split, found: set[str], tag: str, **extra) -> Submission:
    sub = submission_create(user=user, split=Split.objects.get(pk=split.pk),
                            upload=SimpleUploadedFile("run.txt", _run(found, tag)),
                            metadata={"system_name": tag, "visibility": "public"}, enqueue=False, **extra)
    return submission_score_now(sub.pk)


@pytest.fixture
def task(db, alice, bob, private_run_storage, own_cache_namespace):
    bench = Benchmark.objects.create(slug="board", name="Board")
    dataset = Dataset.objects.create(benchmark=bench, slug="board-t1", name="Board 1", language="en",
                                     docid_example="d1", measures=MEASURES, primary_measure="R@10")
    corpus_set(dataset=dataset, ids=[f"d{i}" for i in range(1, 11)] + [f"rel-{q}" for q in QIDS])
    split = Split.objects.create(dataset=dataset, name="test", kind="test", hidden=True, daily_limit=0,
                                 total_limit=0)
    for q in QIDS:
        Topic.objects.create(split=split, qid=q, text=f"Question {q}?", category="civil")
    qrels_version_add(split=split, qrels={q: {f"rel-{q}": 1} for q in QIDS})
    now = timezone.now()
    phase = Phase.objects.create(split=split, title="Board task", opens_at=now - timedelta(days=1),
                                 closes_at=now + timedelta(days=2), public_share=2 / 3, public_qids=PUBLIC)
    red = team_create(phase=phase, user=alice, name="Red")
    team_create(phase=phase, user=bob, name="Blue")
    return phase, red


def test_the_private_board_ranks_released_runs_only_on_the_primary_measure_and_counts_each_row(task, alice, bob):
    phase, _ = task
    split = phase.split
    good = _upload(alice, split, set(PUBLIC[:15]) | set(PRIVATE[:5]), "good")
    # The probe: the same public part (no improvement: held back) and every private topic found.
    probe = _upload(alice, split, set(PUBLIC[:15]) | set(PRIVATE), "probe")
    assert good.results.get().released and not probe.results.get().released
    _upload(bob, split, set(PUBLIC[:16]) | set(PRIVATE[:2]), "blue")
    close(phase)
    assert phase_reveal(phase_id=phase.pk).created
    board = PrivateBoard.objects.get(phase=phase)
    red = next(r for r in board.rows if r["team"] == "Red")
    assert red["submission_id"] == good.pk, "the board ranked a run the Ladder held back"
    assert red["scores"] == {"R@10": 0.5}, f"every measure of the hidden split, or a value off the grid: {red['scores']}"
    assert board.measures == ["R@10"]
    # Each row a ledger entry of the reveal, with its bits (the private part's 10 topics: 11 values).
    reveals = Release.objects.filter(split=split, kind=Release.Kind.REVEAL)
    assert sorted(reveals.values_list("submission_id", flat=True)) == sorted(r["submission_id"] for r in board.rows)
    assert all(r.bits == pytest.approx(3.459, abs=0.01) and not r.first for r in reveals)
    assert phase_reveal(phase_id=phase.pk).created is False and reveals.count() == 2  # once


def test_a_run_the_team_marked_final_is_ranked_even_when_held_back(task, alice):
    from submissions.services.finals import FINAL_RUNS_CAP, submission_mark_final

    phase, _ = task
    _upload(alice, phase.split, set(PUBLIC[:15]) | set(PRIVATE[:5]), "good")
    probe = _upload(alice, phase.split, set(PUBLIC[:15]) | set(PRIVATE), "probe")
    submission_mark_final(submission=probe, user=alice, final=True)  # the team's choice, at most FINAL_RUNS_CAP
    close(phase)
    assert phase_reveal(phase_id=phase.pk).created
    red = next(r for r in PrivateBoard.objects.get(phase=phase).rows if r["team"] == "Red")
    assert red["submission_id"] == probe.pk and FINAL_RUNS_CAP == 5


def test_a_phase_run_sent_again_after_the_close_is_refused_whatever_its_tag_or_sender(task, alice, bob,
                                                                                       django_user_model):
    from tests.users import verified

    phase, red = task
    split = phase.split
    found = set(PUBLIC[:15]) | set(PRIVATE[:3])
    run = _upload(alice, split, found, "red-1")
    api = APIClient()
    during = api.get(reverse("api:submission", args=[run.pk])).json()["scores"]
    assert during == {"R@10": 0.75}
    close(phase)
    assert phase_reveal(phase_id=phase.pk).created
    carol = verified(django_user_model.objects.create_user("carol", "carol@example.org", "correct horse battery"))
    for who, tag in ((alice, "red-1"), (alice, "red-1-again"), (bob, "copied"), (carol, "red-1")):
        with pytest.raises(UploadRefused, match="run of the shared task"):
            _upload(who, split, found, tag)
    # A new run is ranked on all topics, as every run sent after the task.
    other = _upload(alice, split, found | {PRIVATE[5]}, "new")
    assert other.after_task and api.get(reverse("api:submission", args=[other.pk])).json()["scores"]


def test_a_baseline_shown_on_the_public_part_is_not_shown_on_all_topics_after_the_reveal(task, staff):
    phase, _ = task
    baseline = _upload(staff, phase.split, set(PUBLIC[:6]) | set(PRIVATE), "bm25", is_baseline=True)
    api = APIClient()
    public = api.get(reverse("api:submission", args=[baseline.pk])).json()["scores"]
    assert public == {"R@10": 0.3}, "during the task a baseline shows its public part"
    close(phase)
    assert phase_reveal(phase_id=phase.pk).created
    after = api.get(reverse("api:submission", args=[baseline.pk])).json()["scores"]
    assert not after, f"private = 3F - 2P = {3 * after.get('R@10', 0) - 2 * public['R@10']:.2f} (the gold: 1.00)"


def test_the_private_boards_exports_hold_the_primary_measure_with_captions_true_of_their_columns(task, alice, bob,
                                                                                                client):
    phase, _ = task
    _upload(alice, phase.split, set(PUBLIC[:15]) | set(PRIVATE[:5]), "good")
    _upload(bob, phase.split, set(PUBLIC[:16]) | set(PRIVATE[:2]), "blue")
    close(phase)
    assert phase_reveal(phase_id=phase.pk).created
    url = lambda fmt: reverse("leaderboard:board_export", args=[phase.pk, fmt])  # noqa: E731
    csv = client.get(url("csv")).content.decode().splitlines()
    assert csv[0].endswith('"R@10","unit"') and "MRR@10" not in csv[0] and "nDCG@10" not in csv[0]
    data = json.loads(client.get(url("json")).content)
    assert data["measures"] == ["R@10"] and all(set(e["scores"]) == {"R@10"} for e in data["entries"])
    assert data["grid"] == pytest.approx(0.1), "the JSON's grid is the private part's (10 topics), not the split's"
    tex = client.get(url("tex")).content.decode()
    caption = tex.split("\\caption{")[1].split("}\n")[0]
    assert "10 private topics" in caption and "R@10 in percent" in caption and "primary measure only" in caption
    assert "10 points" in caption and "(test split)" not in caption
    header = next(line for line in tex.splitlines() if line.startswith("System"))
    assert header == "System & R@10 \\\\"
    page = client.get(phase.get_absolute_url()).content.decode()
    assert ">MRR@10<" not in page.split("Private board")[-1]
