"""Phases: the seeded partition fixed at the opening, uploads refused before the opening and without a team,
team runs while open, runs after the close on the living board marked "after the task", caps per team."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.models import ApiToken
from campaigns.models import Phase
from campaigns.selectors import phase_partition
from submissions.errors import QuotaExceeded, UploadRefused
from submissions.models import LadderBest, Submission
from submissions.services import submission_create

from .conftest import ALICE_RANKS, BOB_RANKS, QIDS, close, run_bytes, upload

pytestmark = pytest.mark.django_db


def test_the_partition_is_seeded_and_keeps_at_least_one_topic_on_each_side():
    a = Phase.draw_public(QIDS, share=0.5, seed=7)
    assert a == Phase.draw_public(list(reversed(QIDS)), share=0.5, seed=7)  # the order of the topics does not matter
    assert len(a) == 4 or len(a) == 5
    assert Phase.draw_public(QIDS, share=0.05, seed=1) and len(Phase.draw_public(QIDS, share=0.95, seed=1)) == 8


def test_the_partition_is_fixed_at_the_opening(task_world):
    phase = task_world.phase
    before = list(phase.public_qids)
    phase.fix_partition(QIDS)  # the phase has opened: no new draw
    assert phase.public_qids == before
    phase.public_share = 0.8
    with pytest.raises(ValidationError, match="fixed at the opening"):
        phase.full_clean()


def test_a_partition_is_drawn_the_first_time_scores_need_it(task_world):
    Phase.objects.filter(pk=task_world.phase.pk).update(public_qids=[])
    public = phase_partition(split_id=task_world.split.pk)
    assert public and public < set(QIDS)
    assert phase_partition(split_id=task_world.split.pk) == public  # drawn once, then kept


def test_an_upload_before_the_opening_is_refused_with_the_dates(task_world, alice):
    Phase.objects.filter(pk=task_world.phase.pk).update(opens_at=timezone.now() + timedelta(hours=5))
    with pytest.raises(UploadRefused) as exc:
        upload(alice, task_world.split, ALICE_RANKS, "early")
    assert "opens at" in exc.value.message and "Europe/Brussels" in exc.value.message and "UTC" in exc.value.message
    assert "come back then" in exc.value.message
    assert not Submission.objects.exists()


def test_the_api_refuses_an_upload_before_the_opening_naming_the_dates(task_world, alice):
    Phase.objects.filter(pk=task_world.phase.pk).update(opens_at=timezone.now() + timedelta(hours=5))
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {ApiToken.issue(user=alice, name='t')[1]}")
    from django.core.files.uploadedfile import SimpleUploadedFile

    response = api.post(reverse("api:submissions"), {
        "dataset": "coliee-t3", "split": "test", "system_name": "early",
        "run_file": SimpleUploadedFile("run.txt", run_bytes(ALICE_RANKS, "e"))}, format="multipart")
    assert response.status_code == 400
    assert "opens at" in response.json()["error"]["message"]


def test_an_upload_from_someone_in_no_team_is_refused_with_the_task_page(task_world, django_user_model):
    from tests.users import verified

    dave = verified(django_user_model.objects.create_user("dave", "dave@example.org", "pw-pw-pw-pw-1"))
    with pytest.raises(UploadRefused) as exc:
        upload(dave, task_world.split, ALICE_RANKS, "solo")
    assert reverse("leaderboard:task", args=[task_world.phase.pk]) in exc.value.message
    assert "Create a team or join one" in exc.value.message


def test_a_members_run_is_the_teams_and_the_board_shows_the_team(task_world, carol, client):
    sub = upload(carol, task_world.split, ALICE_RANKS, "red run")
    assert sub.entrant_team_id == task_world.red.pk and not sub.after_task
    page = client.get(reverse("leaderboard:dataset", args=["coliee-t3"])).content.decode()
    assert "team Red" in page
    api = client.get(reverse("api:leaderboard", args=["coliee-t3"])).json()
    row = next(r for r in api["entries"] if r["system"] == "red run")
    assert row["team"] == "Red" and row["owner"] == "team Red"


def test_the_caps_count_per_team_whoever_sends(task_world, alice, carol):
    upload(alice, task_world.split, ALICE_RANKS, "a1", score=False)
    upload(carol, task_world.split, {**ALICE_RANKS, "q9": 8}, "c1", score=False)
    upload(alice, task_world.split, {**ALICE_RANKS, "q9": 9}, "a2", score=False)
    with pytest.raises(QuotaExceeded, match="Your team .Red. has sent 3 runs"):
        upload(carol, task_world.split, {**ALICE_RANKS, "q9": 10}, "c2", score=False)


def test_the_upload_page_shows_the_teams_quota(task_world, carol, client):
    upload(carol, task_world.split, ALICE_RANKS, "c1", score=False)
    client.force_login(carol)
    page = client.get(reverse("participants:upload", args=["coliee-t3"]) + "?split=test")
    assert page.status_code == 200


def test_the_ladder_counts_per_team(task_world, alice, carol):
    from catalogue.models import Split

    Split.objects.filter(pk=task_world.split.pk).update(ladder=True)
    upload(alice, task_world.split, ALICE_RANKS, "a1")
    upload(carol, task_world.split, BOB_RANKS, "c1")
    bests = LadderBest.objects.filter(split=task_world.split)
    assert bests.count() == 1 and bests.get().team_id == task_world.red.pk


def test_an_upload_one_second_after_the_close_goes_to_the_living_board_marked_after_the_task(task_world, alice, client):
    close(task_world.phase, seconds_ago=1)
    sub = upload(alice, task_world.split, ALICE_RANKS, "late run")
    assert sub.after_task and sub.entrant_team_id is None
    page = client.get(reverse("leaderboard:dataset", args=["coliee-t3"])).content.decode()
    assert "late run" in page and "after the task" in page


def test_the_dataset_page_shows_the_timeline_and_a_countdown_without_script(task_world, client):
    response = client.get(reverse("leaderboard:dataset", args=["coliee-t3"]))
    page = response.content.decode()
    assert "COLIEE 2027 Task 3" in page
    assert "closes in 1 day 23 hours" in page or "closes in 2 days" in page
    assert "Europe/Brussels" in page and "UTC" in page
    assert "<script>" not in page.split("task-timelines", 1)[1].split("</section>", 1)[0]
    assert "public part" in page
    # The clock moves: the page is not served from the whole-page cache.
    Phase.objects.filter(pk=task_world.phase.pk).update(closes_at=timezone.now() + timedelta(minutes=30))
    assert "closes in 29 minutes" in client.get(reverse("leaderboard:dataset", args=["coliee-t3"])).content.decode()


def test_the_task_page_shows_the_dates_in_the_phase_time_zone(task_world, client):
    page = client.get(reverse("leaderboard:task", args=[task_world.phase.pk])).content.decode()
    assert "Europe/Brussels" in page and "closes in" in page and "Red" in page and "Blue" in page


def test_baselines_are_not_held_to_the_dates(task_world, staff):
    Phase.objects.filter(pk=task_world.phase.pk).update(opens_at=timezone.now() + timedelta(hours=5))
    from django.core.files.uploadedfile import SimpleUploadedFile

    sub = submission_create(user=staff, split=task_world.split, upload=SimpleUploadedFile("b.txt", run_bytes(BOB_RANKS, "b")),
                            metadata={"system_name": "BM25"}, is_baseline=True, enqueue=False)
    assert sub.entrant_team_id is None and not sub.after_task


def baseline(staff, split, ranks: dict[str, int], name: str) -> Submission:
    """A curator's reference run, scored (a phase may be set up on a split that has these)."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    from submissions.services import submission_score_now

    sub = submission_create(user=staff, split=split, upload=SimpleUploadedFile("b.txt", run_bytes(ranks, "b")),
                            metadata={"system_name": name, "visibility": "public"}, is_baseline=True, enqueue=False)
    return submission_score_now(sub.pk)


def test_runs_scored_before_the_phase_show_their_public_part_once_the_curator_saves_it(task_world, staff, client):
    from submissions.models import Result, ResultPart

    Phase.objects.filter(pk=task_world.phase.pk).delete()
    early = baseline(staff, task_world.split, BOB_RANKS, "before the task")
    assert Result.objects.get(submission=early).scores["R@10"] == pytest.approx(5 / 9)  # all topics: no phase
    client.force_login(staff)
    now = timezone.now()
    response = client.post(reverse("admin:campaigns_phase_add"), {
        "split": task_world.split.pk, "title": "Late task", "opens_at_0": (now - timedelta(hours=1)).strftime("%Y-%m-%d"),
        "opens_at_1": (now - timedelta(hours=1)).strftime("%H:%M:%S"),
        "closes_at_0": (now + timedelta(days=3)).strftime("%Y-%m-%d"), "closes_at_1": "12:00:00",
        "time_zone": "UTC", "daily_cap": 5, "total_cap": 30, "max_final_runs": 3, "public_share": 0.45,
        "seed": 11})
    assert response.status_code == 302, response.content.decode()[:3000]
    phase = Phase.objects.get(title="Late task")
    public = set(phase.public_qids)
    assert len(public) == 4
    result = Result.objects.get(submission=early)
    found = sum(1 for q in public if BOB_RANKS[q] and BOB_RANKS[q] <= 10)
    assert result.scores["R@10"] == pytest.approx(found / 4)
    assert ResultPart.objects.filter(submission=early).count() == 3


def test_a_new_phase_makes_the_cached_dataset_page_stale(task_world, client):
    from catalogue.models import Split

    Phase.objects.filter(pk=task_world.phase.pk).update(revealed_at=timezone.now())  # a revealed task: cacheable
    client.get(reverse("leaderboard:dataset", args=["coliee-t3"]))
    before = Split.objects.get(pk=task_world.split.pk).cache_version
    Phase.objects.get(pk=task_world.phase.pk).save()
    assert Split.objects.get(pk=task_world.split.pk).cache_version == before + 1


def test_a_team_runs_try_number_counts_the_teams_runs(task_world, alice, carol, client):
    from submissions.selectors import submission_ordinal

    first = upload(alice, task_world.split, ALICE_RANKS, "first")
    second = upload(carol, task_world.split, {**ALICE_RANKS, "q9": 2}, "second")
    assert submission_ordinal(submission=first) == 1 and submission_ordinal(submission=second) == 2
    entries = client.get(reverse("api:leaderboard", args=["coliee-t3"])).json()["entries"]
    assert {e["system"]: e["owner_submission_number"] for e in entries} == {"first": 1, "second": 2}


def test_a_phase_needs_a_hidden_retrieval_split(task_world):
    from catalogue.models import Dataset, Split

    Split.objects.filter(pk=task_world.split.pk).update(hidden=False)
    phase = Phase.objects.get(pk=task_world.phase.pk)
    with pytest.raises(ValidationError, match="hidden split"):
        phase.full_clean()
    Split.objects.filter(pk=task_world.split.pk).update(hidden=True)
    Dataset.objects.filter(pk=task_world.dataset.pk).update(task="single")
    with pytest.raises(ValidationError, match="per-topic scores"):
        Phase.objects.get(pk=task_world.phase.pk).full_clean()


def upcoming_phase_form(split, title: str) -> dict:
    """The admin's form for a phase opening tomorrow (public share 0.45, seed 11)."""
    now = timezone.now()
    return {"split": split.pk, "title": title,
            "opens_at_0": (now + timedelta(days=1)).strftime("%Y-%m-%d"), "opens_at_1": "12:00:00",
            "closes_at_0": (now + timedelta(days=3)).strftime("%Y-%m-%d"), "closes_at_1": "12:00:00",
            "time_zone": "UTC", "daily_cap": 5, "total_cap": 30, "max_final_runs": 3, "public_share": 0.45,
            "seed": 11}


def test_the_partition_stays_once_runs_show_their_public_part(task_world, staff, client):
    """Before the opening a phase's draw follows its share and seed; once stored runs show their score on the
    public topics, a new draw would show each of them on a second set of topics, and the two means differ by
    the topics that moved in or out (one topic, for a small change of the share)."""
    from submissions.models import Result

    Phase.objects.filter(pk=task_world.phase.pk).delete()
    early = baseline(staff, task_world.split, BOB_RANKS, "before the task")
    client.force_login(staff)
    form = upcoming_phase_form(task_world.split, "Late task")
    assert client.post(reverse("admin:campaigns_phase_add"), form).status_code == 302
    phase = Phase.objects.get(title="Late task")
    assert phase.state() == "upcoming"
    drawn, shown = list(phase.public_qids), Result.objects.get(submission=early).scores

    url = reverse("admin:campaigns_phase_change", args=[phase.pk])
    response = client.post(url, {**form, "public_share": 0.6, "seed": 12})
    assert response.status_code == 200
    page = response.content.decode()
    assert "The partition is in use" in page and "set them back to 0.45 and 11" in page
    phase.refresh_from_db()
    assert phase.public_qids == drawn and (phase.public_share, phase.seed) == (0.45, 11)
    assert Result.objects.get(submission=early).scores == shown

    renamed = client.post(url, {**form, "title": "Late task, renamed"})  # other fields still change
    assert renamed.status_code == 302, renamed.context["adminform"].form.errors if renamed.context else renamed
    phase.refresh_from_db()
    assert phase.title == "Late task, renamed" and phase.public_qids == drawn
    assert "fixed (runs on the split show their score on its public topics)" in client.get(url).content.decode()


def test_an_upcoming_phase_without_stored_runs_is_drawn_again_at_each_save(task_world, staff, client):
    Phase.objects.filter(pk=task_world.phase.pk).delete()
    client.force_login(staff)
    form = upcoming_phase_form(task_world.split, "Fresh task")
    assert client.post(reverse("admin:campaigns_phase_add"), form).status_code == 302
    phase = Phase.objects.get(title="Fresh task")
    url = reverse("admin:campaigns_phase_change", args=[phase.pk])
    assert client.post(url, {**form, "public_share": 0.8}).status_code == 302
    phase.refresh_from_db()
    assert phase.public_qids == Phase.draw_public(QIDS, share=0.8, seed=11)


def test_a_phase_cannot_be_set_up_on_a_split_showing_participants_scores(task_world, bob, staff, client):
    """Their all-topic values were shown; during the task the public part's would be, and a participant who
    sends such a run again for a team (a new run, on the team's own Ladder) gets both: by difference
    (N * all - Npub * public) the private topics'. So the split must have no participants' released runs."""
    from submissions.models import Result

    Phase.objects.filter(pk=task_world.phase.pk).delete()
    early = upload(bob, task_world.split, BOB_RANKS, "before the task")
    assert Result.objects.get(submission=early).released
    client.force_login(staff)
    response = client.post(reverse("admin:campaigns_phase_add"), upcoming_phase_form(task_world.split, "Late"))
    assert response.status_code == 200
    page = response.content.decode()
    assert "already shows the scores of 1 run by participants" in page and "without participants" in page
    assert not Phase.objects.filter(title="Late").exists()
    assert Result.objects.get(submission=early).scores["R@10"] == pytest.approx(5 / 9)  # not cut


def test_a_phase_stays_on_its_split(task_world, staff, client):
    from catalogue.models import Split

    other = Split.objects.create(dataset=task_world.dataset, name="test-2027", kind="test", hidden=True)
    client.force_login(staff)
    form = upcoming_phase_form(task_world.split, task_world.phase.title)
    response = client.post(reverse("admin:campaigns_phase_change", args=[task_world.phase.pk]),
                           {**form, "split": other.pk})
    assert response.status_code == 200 and "A phase stays on its split" in response.content.decode()
    assert Phase.objects.get(pk=task_world.phase.pk).split_id == task_world.split.pk


def _classification_split():
    """A hidden split of a single-label classification dataset (macro-F1: no per-example values to cut)."""
    from catalogue.models import Benchmark, Dataset, Split

    bench = Benchmark.objects.create(slug="areas-task", name="Areas")
    dataset = Dataset.objects.create(benchmark=bench, slug="areas-task-1", name="Legal areas", language="fr",
                                     task=Dataset.Task.SINGLE,
                                     measures=["macro-F1"], primary_measure="macro-F1")
    return Split.objects.create(dataset=dataset, name="test", kind="test", hidden=True)


def test_a_shared_task_on_a_classification_split_is_refused_with_its_reason_by_every_path(db, staff, client):
    """#37 item 5: a shared task on a classification split revealed an empty private board (no per-example values
    to cut). The admin's form said so already; a phase made another way (a shell, a script, the service) was stored
    and its reveal published an empty board. Now every path refuses it with the reason."""
    from campaigns.errors import TaskRefused
    from campaigns.services import phase_create

    split = _classification_split()
    client.force_login(staff)
    page = client.post(reverse("admin:campaigns_phase_add"), upcoming_phase_form(split, "Areas 2027")).content.decode()
    assert "need per-topic scores" in page and "private board would be empty" in page
    now = timezone.now()
    with pytest.raises(TaskRefused, match="need per-topic scores.*private board would be empty"):
        phase_create(split=split, title="Areas 2027", opens_at=now + timedelta(days=1), closes_at=now + timedelta(days=3))
    with pytest.raises(ValidationError, match="need per-topic scores"):
        Phase.objects.create(split=split, title="Areas 2027", opens_at=now + timedelta(days=1),
                             closes_at=now + timedelta(days=3))
    assert not Phase.objects.filter(split=split).exists()


def test_the_service_creates_a_phase_on_a_hidden_retrieval_split(task_world):
    from campaigns.services import phase_create
    from catalogue.models import Split, Topic

    fresh = Split.objects.create(dataset=task_world.dataset, name="test-2028", kind="test", hidden=True)
    for qid in QIDS:
        Topic.objects.create(split=fresh, qid=qid, text=f"Question {qid}?", category="civil")
    now = timezone.now()
    phase = phase_create(split=fresh, title="COLIEE 2028", opens_at=now + timedelta(days=1),
                         closes_at=now + timedelta(days=3), public_share=0.5, seed=3)
    assert phase.pk and len(phase.public_qids) == 4  # half of 9 topics, rounded to even


def test_a_phase_whose_dataset_is_no_longer_retrieval_publishes_no_empty_private_board(task_world, alice):
    """A phase stored before the rule (or a dataset whose task a curator changed since): the reveal says why and
    publishes nothing, rather than an empty board."""
    from campaigns.models import PrivateBoard
    from catalogue.models import Dataset
    from leaderboard.private_board import phase_reveal

    upload(alice, task_world.split, ALICE_RANKS, "red")
    close(task_world.phase)
    Dataset.objects.filter(pk=task_world.dataset.pk).update(task="single")
    outcome = phase_reveal(phase_id=task_world.phase.pk)
    assert not outcome.created and "need per-topic scores" in outcome.message
    assert not PrivateBoard.objects.exists()
    assert Phase.objects.get(pk=task_world.phase.pk).revealed_at is None
