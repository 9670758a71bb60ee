"""#24 item 1: after a shared task's reveal, the task page's "Rescored on qrels vN" table put each team's
final-run values on the newer qrels beside the snapshot's: a per-entry before/after pair on a hidden split, every
measure, which the budget forbids (``disclosure.shows(split, "version_deltas")`` is False there). One new judgment
on a private topic then moved a team's value, read by an anonymous visitor. The page now names the newer version
and says why it shows no rescored value; a public split keeps the table."""

from __future__ import annotations

import pytest
from django.urls import reverse

from campaigns.models import Phase, PrivateBoard
from catalogue.models import Split
from catalogue.services import qrels_version_add
from leaderboard.private_board import phase_reveal, private_board_rescored
from submissions import disclosure
from submissions.models import Submission
from submissions.services import qrels_version_publish_and_rescore, submission_rescore_on
from submissions.services.finals import submission_mark_final

from .hidden_task import ALICE_RANKS, BOB_RANKS, QRELS, carol, close, task_world, upload  # noqa: F401

pytestmark = pytest.mark.django_db


def _reveal_then_judge_q6(world, alice, bob) -> PrivateBoard:
    red = upload(alice, world.split, ALICE_RANKS, "red")
    blue = upload(bob, world.split, BOB_RANKS, "blue")
    submission_mark_final(submission=red, user=alice, final=True)
    submission_mark_final(submission=blue, user=bob, final=True)
    close(world.phase, seconds_ago=5)
    phase_reveal(phase_id=world.phase.pk)
    # The curator publishes one new judgment: d25 relevant on the private topic q6 (both runs hold d25 in their
    # top 10 as a filler; Blue's q6 had nothing relevant before).
    new_qrels = {q: dict(docs) for q, docs in QRELS.items()}
    new_qrels["q6"]["d25"] = 1
    version, _ = qrels_version_add(split=world.split, qrels=new_qrels, publish=False)
    # A small change on a hidden split: published only with a curator's reason (test_qrels_batch_leak.py).
    qrels_version_publish_and_rescore(split=Split.objects.get(pk=world.split.pk), version=version,
                                      small_change_reason="errata")
    for sub in Submission.objects.filter(split=world.split, status=Submission.Status.SCORED):
        submission_rescore_on(submission_id=sub.pk, qrels_version_id=version.pk)
    return PrivateBoard.objects.get()


def test_a_new_judgment_on_a_private_topic_gives_no_before_after_pair_per_team(task_world, alice, bob,  # noqa: F811
                                                                              client):
    board = _reveal_then_judge_q6(task_world, alice, bob)
    split = Split.objects.get(pk=task_world.split.pk)
    assert split.hidden and not disclosure.shows(split, "version_deltas")
    before = {r["team"]: r["scores"] for r in board.rows}
    assert before["Blue"]["R@10"] is not None  # the snapshot itself is shown

    rescored = private_board_rescored(phase=Phase.objects.get(pk=task_world.phase.pk), board=board)
    assert rescored is not None and rescored.withheld
    assert rescored.rows == []  # no value on the newer qrels, hence no pair
    page = client.get(reverse("leaderboard:task", args=[task_world.phase.pk])).content.decode()
    assert "Rescored on qrels v2" in page
    assert "beside the snapshot" in page  # the one sentence that says why
    # No table body under the rescored heading: the snapshot's table is the page's only board.
    assert page.count('class="leaderboard-table"') == 1


def test_a_public_split_keeps_the_rescored_table(task_world, alice, bob, client):  # noqa: F811
    Split.objects.filter(pk=task_world.split.pk).update(hidden=False)
    task_world.split.refresh_from_db()
    board = _reveal_then_judge_q6(task_world, alice, bob)
    rescored = private_board_rescored(phase=Phase.objects.get(pk=task_world.phase.pk), board=board)
    assert rescored is not None and not rescored.withheld
    after = {r["team"]: r["scores"] for r in rescored.rows}
    before = {r["team"]: r["scores"] for r in board.rows}
    assert before["Blue"] != after["Blue"]  # the new judgment moved Blue: shown on a public split
    page = client.get(reverse("leaderboard:task", args=[task_world.phase.pk])).content.decode()
    assert page.count('class="leaderboard-table"') == 2
