"""Final runs and the reveal: the private board ranks each team's best final run on the private topics, with
tiers; it is published once (idempotent), as a snapshot that later judgments do not change; its exports."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.core import mail
from django.urls import reverse
from django.utils import timezone

from campaigns.errors import TaskRefused
from campaigns.models import Phase, PrivateBoard, SentNotification
from catalogue.models import QrelsVersion, Split
from catalogue.services import qrels_version_add
from leaderboard.private_board import phase_reveal, reveal_closed_phases
from submissions.models import LadderBest, Result, Submission
from submissions.services import submission_rescore_on
from submissions.services.finals import submission_mark_final, team_final_runs

from .conftest import ALICE_RANKS, BOB_RANKS, QRELS, close, upload

pytestmark = pytest.mark.django_db


def _vary(ranks: dict[str, int], **changes: int) -> dict[str, int]:
    return {**ranks, **changes}


# --- final runs -------------------------------------------------------------------------------------------


def test_a_team_marks_up_to_n_final_runs_before_the_close(task_world, alice, carol):
    runs = [upload(alice, task_world.split, _vary(ALICE_RANKS, q9=n), f"r{n}") for n in (2, 3, 6)]
    submission_mark_final(submission=runs[0], user=carol, final=True)  # any member of the team
    submission_mark_final(submission=runs[1], user=alice, final=True)
    with pytest.raises(TaskRefused, match="limit of this task: unmark one first"):
        submission_mark_final(submission=runs[2], user=alice, final=True)
    submission_mark_final(submission=runs[0], user=alice, final=False)
    submission_mark_final(submission=runs[2], user=alice, final=True)
    finals, marked = team_final_runs(team=task_world.red, phase=task_world.phase)
    assert marked and {s.pk for s in finals} == {runs[1].pk, runs[2].pk}


def test_only_the_team_marks_its_runs_and_never_after_the_close(task_world, alice, bob):
    run = upload(alice, task_world.split, ALICE_RANKS, "r")
    with pytest.raises(TaskRefused, match="Only the members"):
        submission_mark_final(submission=run, user=bob, final=True)
    close(task_world.phase)
    with pytest.raises(TaskRefused, match="final runs are fixed"):
        submission_mark_final(submission=Submission.objects.get(pk=run.pk), user=alice, final=True)


def test_without_marks_the_latest_n_scored_runs_are_final(task_world, alice):
    runs = [upload(alice, task_world.split, _vary(ALICE_RANKS, q9=n), f"r{n}") for n in (2, 3, 6)]
    finals, marked = team_final_runs(team=task_world.red, phase=task_world.phase)
    assert not marked and [s.pk for s in finals] == [runs[2].pk, runs[1].pk]  # max_final_runs = 2


def test_marking_final_through_the_task_page(task_world, alice, client):
    run = upload(alice, task_world.split, ALICE_RANKS, "page run")
    client.force_login(alice)
    page = client.get(reverse("leaderboard:task", args=[task_world.phase.pk])).content.decode()
    # The public part's R@10 (3 of 4) on the grid of its 4 topics (50 points).
    assert "page run" in page and "Mark final" in page and ">100<" in page
    response = client.post(reverse("leaderboard:mark_final", args=[run.pk]), {"final": "1"})
    assert response.status_code == 302
    assert Submission.objects.get(pk=run.pk).final_run


# --- the reveal -----------------------------------------------------------------------------------------------


@pytest.fixture
def closed_task(task_world, alice, bob, carol):
    red_best = upload(alice, task_world.split, ALICE_RANKS, "red best private")  # private R@10 1.0
    red_other = upload(carol, task_world.split, BOB_RANKS, "red like blue")  # private R@10 0.2
    blue = upload(bob, task_world.split, BOB_RANKS, "blue only")
    submission_mark_final(submission=red_other, user=alice, final=True)
    submission_mark_final(submission=red_best, user=alice, final=True)
    close(task_world.phase, seconds_ago=5)
    # A team run stamped one second after the close (its request passed the checks just before), and one after.
    late = upload(bob, task_world.split, _vary(ALICE_RANKS, q4=1), "blue late", score=False)
    Submission.objects.filter(pk=late.pk).update(created_at=task_world.phase.closes_at + timedelta(seconds=1),
                                                 entrant_team=task_world.blue, after_task=False, final_run=True)
    from submissions.services import submission_score_now

    submission_score_now(late.pk)
    after = upload(bob, task_world.split, _vary(ALICE_RANKS, q4=2), "blue after the task")
    assert after.after_task
    return {"red_best": red_best, "red_other": red_other, "blue": blue, "late": late, "after": after}


def test_the_private_board_ranks_each_teams_best_final_run_on_the_private_topics(task_world, closed_task, client):
    outcome = phase_reveal(phase_id=task_world.phase.pk)
    assert outcome.created
    board = PrivateBoard.objects.get(phase=task_world.phase)
    systems = [(r["team"], r["system"], r["rank"], r["scores"]["R@10"]) for r in board.rows]
    # Blue leads the public board (1.0 vs 0.75); on the private topics Red's best final run wins.
    assert systems == [("Red", "red best private", 1, 1.0), ("Blue", "blue only", 2, 0.2)]
    assert all("tier" in r["extra"] for r in board.rows)
    assert board.n_queries == 5 and "randomization" in board.method
    names = {r["system"] for r in board.rows}
    assert "blue late" not in names and "blue after the task" not in names
    page = client.get(reverse("leaderboard:task", args=[task_world.phase.pk])).content.decode()
    assert "Private board" in page and "red best private" in page and "blue late" not in page


def test_a_teams_final_runs_tied_on_the_grid_are_not_told_apart_by_their_full_precision_means(task_world,
                                                                                                 closed_task):
    """#24: the board named a team's best final run by its full-precision private mean; of two finals tied on the
    grid (5 private topics: 20 points) the one named said which did better. Now the oldest of the tied is named."""
    from submissions.models import ResultPart

    red_best, red_other = closed_task["red_best"], closed_task["red_other"]
    assert red_best.pk < red_other.pk
    parts = ResultPart.objects.filter(part=ResultPart.Part.PRIVATE, qrels_version=task_world.split.current_qrels)
    # Both on the grid's 1.0; the later run a little better at full precision.
    for sub, value in ((red_best, 0.95), (red_other, 0.99)):
        part = parts.get(submission=sub)
        part.primary_score, part.scores = value, {**part.scores, "R@10": value}
        part.save(update_fields=["primary_score", "scores"])
    phase_reveal(phase_id=task_world.phase.pk)
    board = PrivateBoard.objects.get(phase=task_world.phase)
    red = next(r for r in board.rows if r["team"] == "Red")
    assert (red["system"], red["scores"]["R@10"]) == ("red best private", 1.0), red


def test_a_run_uploaded_one_second_after_the_close_never_appears_on_the_private_board(task_world, closed_task):
    # Even marked final, and even better than every other run of its team on the private topics.
    phase_reveal(phase_id=task_world.phase.pk)
    board = PrivateBoard.objects.get(phase=task_world.phase)
    assert closed_task["late"].pk not in {r["submission_id"] for r in board.rows}
    assert closed_task["after"].pk not in {r["submission_id"] for r in board.rows}


def test_the_reveal_twice_changes_nothing(task_world, closed_task):
    first = phase_reveal(phase_id=task_world.phase.pk)
    state = (list(PrivateBoard.objects.values()), sorted(Result.objects.values_list("pk", "scores", "released")),
             sorted(LadderBest.objects.values_list("pk", "result_id")), SentNotification.objects.count(),
             Phase.objects.get(pk=task_world.phase.pk).revealed_at, Split.objects.get(pk=task_world.split.pk).cache_version)
    second = phase_reveal(phase_id=task_world.phase.pk)
    third = reveal_closed_phases()  # the beat task finds nothing to do
    assert first.created and not second.created and third == []
    assert state == (list(PrivateBoard.objects.values()),
                     sorted(Result.objects.values_list("pk", "scores", "released")),
                     sorted(LadderBest.objects.values_list("pk", "result_id")), SentNotification.objects.count(),
                     Phase.objects.get(pk=task_world.phase.pk).revealed_at,
                     Split.objects.get(pk=task_world.split.pk).cache_version)


def test_no_reveal_before_the_close(task_world, closed_task):
    Phase.objects.filter(pk=task_world.phase.pk).update(closes_at=timezone.now() + timedelta(hours=1))
    outcome = phase_reveal(phase_id=task_world.phase.pk)
    assert not outcome.created and "no reveal before" in outcome.message
    assert not PrivateBoard.objects.exists()


def test_the_reveal_waits_for_runs_sent_before_the_close(task_world, alice):
    upload(alice, task_world.split, ALICE_RANKS, "queued", score=False)
    close(task_world.phase)
    assert not phase_reveal(phase_id=task_world.phase.pk).created
    assert phase_reveal(phase_id=task_world.phase.pk, force=True).created  # the curator's choice
    assert "still being scored" in PrivateBoard.objects.get().method


def test_after_the_reveal_the_living_board_is_on_all_topics(task_world, closed_task, client):
    phase_reveal(phase_id=task_world.phase.pk)
    result = Result.objects.get(submission=closed_task["red_best"])
    assert result.scores["R@10"] == pytest.approx(8 / 9)
    page = client.get(reverse("leaderboard:dataset", args=["coliee-t3"])).content.decode()
    assert ">80<" in page and "±10 points: hidden split" in page  # 8/9 on the grid of 9 topics (20 points)


def test_later_judgments_do_not_change_the_snapshot(task_world, closed_task, client):
    phase_reveal(phase_id=task_world.phase.pk)
    board = PrivateBoard.objects.get()
    rows, csv_before = list(board.rows), client.get(
        reverse("leaderboard:board_export", args=[task_world.phase.pk, "csv"])).content
    new_qrels = {q: {**docs, "d30": 1} for q, docs in QRELS.items()}
    version, _ = qrels_version_add(split=task_world.split, qrels=new_qrels, publish=False)
    from submissions.services import qrels_version_publish_and_rescore

    qrels_version_publish_and_rescore(split=Split.objects.get(pk=task_world.split.pk), version=version,
                                      small_change_reason="errata")  # a small change on a hidden split
    for sub in Submission.objects.filter(split=task_world.split, status=Submission.Status.SCORED):
        submission_rescore_on(submission_id=sub.pk, qrels_version_id=version.pk)
    assert Split.objects.get(pk=task_world.split.pk).current_qrels_id == version.pk  # the living board moved on
    assert Result.objects.filter(qrels_version=version).exists()
    board.refresh_from_db()
    assert board.rows == rows and board.qrels_version == QrelsVersion.objects.get(split=task_world.split, version=1).version
    assert client.get(reverse("leaderboard:board_export", args=[task_world.phase.pk, "csv"])).content == csv_before
    # The later judgments get their own view of the same final runs, beside the snapshot.
    from leaderboard.private_board import private_board_rescored

    rescored = private_board_rescored(phase=Phase.objects.get(pk=task_world.phase.pk), board=board)
    # A hidden split names the newer version but shows no rescored value (a before/after pair per team; #24).
    assert rescored is not None and rescored.qrels_version == 2 and rescored.withheld and rescored.rows == []
    page = client.get(reverse("leaderboard:task", args=[task_world.phase.pk])).content.decode()
    assert "Rescored on qrels v2" in page and "no rescored value is shown" in page
    # A public split shows the rescored board.
    Split.objects.filter(pk=task_world.split.pk).update(hidden=False)
    rescored = private_board_rescored(phase=Phase.objects.get(pk=task_world.phase.pk), board=board)
    assert rescored is not None and not rescored.withheld
    assert [r["team"] for r in rescored.rows] == ["Red", "Blue"]
    # 5 of 10 relevant on the 5 private topics: 0.5 (a public split: no grid).
    assert rescored.rows[0]["scores"]["R@10"] == pytest.approx(0.5)


def test_the_snapshot_exports_as_csv_json_and_latex(task_world, closed_task, client):
    url = lambda fmt: reverse("leaderboard:board_export", args=[task_world.phase.pk, fmt])  # noqa: E731
    assert client.get(url("csv")).status_code == 404  # nothing before the reveal
    phase_reveal(phase_id=task_world.phase.pk)
    csv = client.get(url("csv")).content.decode()
    assert csv.splitlines()[1].startswith('"1","scored","red best private"')
    data = json.loads(client.get(url("json")).content)
    assert data["board"] == "private" and data["entries"][0]["team"] == "Red" and data["entries"][0]["tier"] == 1
    assert data["qrels_version"] == 1 and data["published_at"]
    tex = client.get(url("tex")).content.decode()
    assert "Private board of COLIEE 2027 Task 3" in tex and "\\toprule" in tex


def test_the_private_board_prints_its_grid_values_alike_and_its_captions_are_true(task_world, closed_task, client):
    """#38: the private board printed "100.00" on its page, CSV and LaTeX for values on a 20-point grid (5 private
    topics), where every other surface prints "100"; its CSV named no unit."""
    import csv as csv_module
    import io
    import re

    phase_reveal(phase_id=task_world.phase.pk)
    url = lambda fmt: reverse("leaderboard:board_export", args=[task_world.phase.pk, fmt])  # noqa: E731
    data = json.loads(client.get(url("json")).content)
    assert data["grid"] == 0.2 and data["scale"] == "fraction" and data["measures"] == ["R@10"]
    assert [e["scores"]["R@10"] for e in data["entries"]] == [1.0, 0.2]
    rows = list(csv_module.DictReader(io.StringIO(client.get(url("csv")).content.decode())))
    assert [(r["R@10"], r["unit"]) for r in rows] == [("100", "percent points"), ("20", "percent points")]
    tex = client.get(url("tex")).content.decode()
    assert "red best private & \\textbf{100} \\\\" in tex and "blue only & 20 \\\\" in tex
    caption = re.search(r"\\caption\{(.*)\}\n", tex).group(1)
    head = next(line for line in tex.splitlines() if line.startswith("System &"))
    assert head == "System & R@10 \\\\"  # the one column the caption names
    assert "R@10 in percent" in caption and "the primary measure only, on a grid of 20 points" in caption
    page = client.get(reverse("leaderboard:task", args=[task_world.phase.pk])).content.decode()
    board = page.split("Private board", 1)[1]
    assert ">100<" in board and ">20<" in board and "100.00" not in board


def test_the_reveal_tells_every_member_once(task_world, closed_task, settings):
    phase_reveal(phase_id=task_world.phase.pk)
    phase_reveal(phase_id=task_world.phase.pk)
    keys = set(SentNotification.objects.filter(kind="board_published").values_list("key", flat=True))
    assert len(keys) == 3  # alice, carol (Red), bob (Blue)
    assert mail.outbox == []  # sent by the worker after the commit, not in the request


def test_the_curator_reveals_from_the_admin(task_world, closed_task, staff, client):
    client.force_login(staff)
    url = reverse("admin:campaigns_phase_changelist")
    response = client.post(url, {"action": "reveal_now", "_selected_action": [task_world.phase.pk]}, follow=True)
    assert response.status_code == 200 and "is published" in response.content.decode()
    assert PrivateBoard.objects.filter(phase=task_world.phase).exists()
    again = client.post(url, {"action": "reveal_now", "_selected_action": [task_world.phase.pk]}, follow=True)
    assert "published before; nothing changed" in again.content.decode()


def test_marking_final_through_the_api(task_world, alice, bob):
    from rest_framework.test import APIClient

    from accounts.models import ApiToken

    run = upload(alice, task_world.split, ALICE_RANKS, "api run")
    url = reverse("api:submission_final", args=[run.pk])
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {ApiToken.issue(user=alice, name='t')[1]}")
    response = api.post(url, {"final": True}, format="json")
    assert response.status_code == 200 and response.json()["final_run"] is True
    assert response.json()["team"] == "Red" and response.json()["after_task"] is False
    other = APIClient()
    other.credentials(HTTP_AUTHORIZATION=f"Token {ApiToken.issue(user=bob, name='t')[1]}")
    refused = other.post(url, {"final": False}, format="json")
    assert refused.status_code == 409 and "Only the members" in refused.json()["error"]["message"]
    close(task_world.phase)
    late = api.post(url, {"final": False}, format="json")
    assert late.status_code == 409 and "final runs are fixed" in late.json()["error"]["message"]
    assert Submission.objects.get(pk=run.pk).final_run


def test_a_private_final_run_is_ranked_but_not_named(task_world, closed_task, client):
    Submission.objects.filter(pk=closed_task["red_best"].pk).update(visibility="private")
    phase_reveal(phase_id=task_world.phase.pk)
    top = PrivateBoard.objects.get().rows[0]
    assert top["team"] == "Red" and top["system"] == "(private run)" and top["scores"]["R@10"] == 1.0
    page = client.get(reverse("leaderboard:task", args=[task_world.phase.pk])).content.decode()
    assert "red best private" not in page
    assert reverse("participants:detail", args=[closed_task["red_best"].pk]) not in page


def test_teams_that_tie_on_the_grid_are_not_ordered_by_their_full_precision_means():
    """The private board is shown on the grid; teams tied there share a rank and are listed by date, then name.

    Their full-precision order would say which of two tied teams did better on the private topics (issue #24).
    """
    import datetime as dt

    from leaderboard.private_board import rank_on_grid
    from leaderboard.selectors import LeaderboardRow

    def row(team: str, value: float, day: int) -> LeaderboardRow:
        return LeaderboardRow(rank=None, kind="scored", submission_id=len(team), system=team, owner=team,
                              family="", paper_url="", code_url="", date=dt.date(2026, 3, day),
                              scores={"R@10": value}, team=team)

    rows = rank_on_grid([row("Zinc", 0.45, 2), row("Amber", 0.41, 1), row("Iris", 0.2, 1)], measure="R@10", step=0.2)
    assert [(r.team, r.rank, r.scores["R@10"]) for r in rows] == [("Amber", 1, 0.4), ("Zinc", 1, 0.4),
                                                                 ("Iris", 3, 0.2)]
    rows = rank_on_grid([row("Zinc", 0.41234, 1), row("Amber", 0.41231, 1)], measure="R@10", step=None)
    assert [(r.team, r.rank, r.scores["R@10"]) for r in rows] == [("Amber", 1, 0.4123), ("Zinc", 1, 0.4123)]
