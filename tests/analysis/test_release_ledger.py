"""The release ledger and the budget of first releases on a hidden split (submissions/services/ledger.py).

Through the real services: runs uploaded and scored synchronously on the
analysis dataset (24 topics, hidden ``test`` split with the Ladder).
"""

from __future__ import annotations

import math
from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse

from campaigns.models import SentNotification
from campaigns.notifications import render_email
from submissions.ledger_models import WAITING_NOTE
from submissions.models import LedgerAlert, Release, ReleasePolicy, ReleaseWait, Result, Submission, Verdict
from submissions.services.ladder import release_waits_judge
from submissions.services.ledger import crafted_reasons, release_check_shape
from submissions.services.sweep import submissions_sweep

pytestmark = pytest.mark.django_db

#: 24 topics: the grid is 5 points (disclosure.step_for), 21 values, log2(21) bits per release of one measure.
BITS = math.log2(21)


def result_of(submission: Submission) -> Result:
    return Result.objects.get(submission=submission, qrels_version=submission.split.current_qrels)


def test_every_release_on_a_hidden_split_is_written_with_its_bits(scored, alice, staff):
    first = scored("test", alice, "late", name="first")
    held = scored("test", alice, "random", name="worse", seed=2)
    better = scored("test", alice, "perfect", name="better")
    scored("test", staff, "random", name="baseline", is_baseline=True)
    scored("dev", alice, "perfect", name="on dev")
    rows = list(Release.objects.order_by("released_at", "pk"))
    assert [r.submission_id for r in rows] == [first.pk, better.pk]  # not the held one, the baseline, the dev split
    assert [r.first for r in rows] == [True, False]
    assert all(r.identity == f"user:{alice.pk}" and r.bits == pytest.approx(BITS) for r in rows)
    assert rows[0].measures == ["R@10"] and "alice" in rows[0].identity_label
    assert not result_of(held).released and not Release.objects.filter(submission=held).exists()


def test_an_identity_passing_its_daily_rate_is_marked_and_curators_are_mailed(scored, alice, staff, settings):
    settings.LEXBOARD_LEDGER_IDENTITY_BITS = 6
    scored("test", alice, "late", name="first")
    # 4.4 bits released and the verdict's 1: within the rate (the rate counts verdicts beside releases)
    assert Verdict.objects.get().bits == 1.0 and not LedgerAlert.objects.exists()
    scored("test", alice, "perfect", name="better")
    alert = LedgerAlert.objects.get()
    assert alert.scope == "identity" and alert.identity == f"user:{alice.pk}"
    assert alert.bits == pytest.approx(2 * BITS + 2)
    mail = SentNotification.objects.get(kind="ledger_alert")
    assert mail.user == staff and "alice" in mail.context["who"] and mail.context["limit"] == "6"
    assert reverse("participants:ledger", args=[alert.split_id]) in mail.context["url"]
    subject, text, html = render_email("ledger_alert", mail.context)
    assert "passed 6 bits today" in subject and "alice" in text and mail.context["url"] in html


def test_the_split_has_a_rate_of_its_own(scored, alice, bob, analysis_dataset):
    split = analysis_dataset.splits.get(name="test")
    ReleasePolicy.objects.create(split=split, split_bits_per_day=6, identity_bits_per_day=100)
    scored("test", alice, "shifted", name="a")
    scored("test", bob, "shifted", name="b", tag="bob")
    alert = LedgerAlert.objects.get()
    assert alert.scope == "split" and alert.identity == "" and alert.limit == 6


def test_first_releases_past_the_daily_budget_wait_for_the_next_day(scored, alice, bob, analysis_dataset, settings):
    settings.LEXBOARD_FIRST_RELEASE_BUDGET = 1
    split = analysis_dataset.splits.get(name="test")
    scored("test", alice, "shifted", name="alice's")
    waiting = scored("test", bob, "perfect", name="bob's")
    result = result_of(waiting)
    assert not result.released and result.ladder_message.startswith("Waiting for tomorrow's release budget")
    assert ReleaseWait.objects.filter(result=result).exists()
    # His page says so; nothing of the run is shown.
    web = Client()
    web.force_login(bob)
    page = web.get(reverse("participants:detail", args=[waiting.pk])).content.decode()
    assert "Waiting for tomorrow&#x27;s release budget" in page or "Waiting for tomorrow's release budget" in page
    assert web.get(reverse("participants:status", args=[waiting.pk])).json()["message"].startswith("Waiting")
    web.force_login(alice)  # others read that it waits, not "not a significant improvement"
    assert web.get(reverse("participants:status", args=[waiting.pk])).json()["message"] == WAITING_NOTE
    # The periodic sweep the same day: still waiting.
    assert "budget_waits_judged" not in submissions_sweep()
    assert not result_of(waiting).released
    # The next day (today's first release moved to yesterday): the sweep releases it.
    Release.objects.filter(split=split).update(day=Release.objects.get().day - timedelta(days=1))
    assert submissions_sweep()["budget_waits_judged"] == 1
    result = result_of(waiting)
    assert result.released and result.ladder_message.startswith("Released")
    assert not ReleaseWait.objects.exists() and Release.objects.get(result=result).first


def _nothing_relevant(user, dataset) -> Submission:
    from django.core.files.uploadedfile import SimpleUploadedFile

    from submissions.services import submission_create, submission_score_now
    from tests.analysis.conftest import N_DOCS, N_TOPICS, qid, relevant_docs

    lines = []
    for i in range(N_TOPICS):
        docs = [f"doc{d}" for d in range(1, N_DOCS + 1) if f"doc{d}" not in relevant_docs(i)][:20]
        lines += [f"{qid(i)} Q0 {doc} {rank} {100 - rank} none" for rank, doc in enumerate(docs, start=1)]
    upload = SimpleUploadedFile("none.txt", ("\n".join(lines) + "\n").encode())
    sub = submission_create(user=user, split=dataset.splits.get(name="test"), upload=upload, enqueue=False,
                            metadata={"system_name": "carol's", "family": "lexical", "visibility": "public"})
    return submission_score_now(sub.pk)


def test_a_new_identitys_run_waits_for_the_budget_whatever_the_ladder_would_say(scored, alice, bob, django_user_model,
                                                                               analysis_dataset, settings):
    """The hold comes before the verdict: given only to admitted runs, "waiting" told the verdict at once."""
    from tests.users import verified

    settings.LEXBOARD_FIRST_RELEASE_BUDGET = 1
    scored("test", alice, "shifted", name="alice's")
    carol = verified(django_user_model.objects.create_user("carol", "carol@example.org", "correct horse battery staple"))
    admitted = result_of(scored("test", bob, "perfect", name="bob's"))
    weak = result_of(_nothing_relevant(carol, analysis_dataset))  # the Ladder refuses it: 0 on every topic
    assert not admitted.released and not weak.released
    assert admitted.ladder_message == weak.ladder_message.replace("carol", "bob")
    assert weak.ladder_message.startswith("Waiting for tomorrow's release budget"), weak.ladder_message


def test_a_curator_releases_a_waiting_run_outside_the_budget(scored, alice, bob, settings):
    settings.LEXBOARD_FIRST_RELEASE_BUDGET = 1
    scored("test", alice, "shifted", name="alice's")
    waiting = scored("test", bob, "perfect", name="bob's")
    wait = ReleaseWait.objects.get()
    assert release_waits_judge(wait_ids=[wait.pk], curator=True) == 1
    assert result_of(waiting).released and not ReleaseWait.objects.exists()


def test_a_budget_of_zero_holds_nothing(scored, alice, bob, settings):
    settings.LEXBOARD_FIRST_RELEASE_BUDGET = 0
    scored("test", alice, "shifted", name="alice's")
    assert result_of(scored("test", bob, "perfect", name="bob's")).released


def test_the_ledger_page_is_for_curators_only(scored, alice, staff, analysis_dataset):
    split = analysis_dataset.splits.get(name="test")
    scored("test", alice, "shifted", name="first")
    url = reverse("participants:ledger", args=[split.pk])
    assert Client().get(url).status_code == 302
    web = Client()
    web.force_login(alice)
    assert web.get(url).status_code == 404
    web.force_login(staff)
    page = web.get(url).content.decode()
    assert "alice" in page and f"{BITS:.1f}" in page and "1 release" in page


# --- crafted shapes ---------------------------------------------------------------------------------


TOPICS = {"q1": "Quelles sont les conditions du divorce?", "q2": "Comment contester un licenciement abusif?",
          "q3": "Le bail commercial peut-il être résilié?"}
TEXTS = {"d1": "Le divorce pour cause de désunion irrémédiable", "d2": "Les marchés publics de travaux",
         "d3": "Le licenciement abusif ouvre droit à une indemnité", "d4": "La pêche en eau douce",
         "d5": "Le bail commercial et sa résiliation", "d9": "Les impôts fonciers"}


def test_it_flags_fillers_with_no_word_of_the_question_ahead_of_a_single_document():
    ranking = {"q1": ["d2", "d4", "d1"], "q2": ["d3", "d2", "d4", "d9"], "q3": ["d5", "d9", "d2"]}
    reasons = crafted_reasons(ranking=ranking, topics=TOPICS, texts=TEXTS)
    assert reasons == ["1 topic puts documents sharing no word with the question ahead of a single document (q1)"]


def test_it_flags_runs_whose_topics_mostly_hold_one_or_two_documents():
    ranking = {"q1": ["d1"], "q2": ["d3", "d2"], "q3": ["d5", "d9", "d2"]}
    assert crafted_reasons(ranking=ranking, topics=TOPICS, texts=TEXTS) == ["2 of 3 topics hold one or two documents"]


def test_an_ordinary_run_is_not_flagged():
    ranking = {"q1": ["d1", "d2", "d4"], "q2": ["d3", "d9", "d2"], "q3": ["d5", "d4", "d9"]}
    assert crafted_reasons(ranking=ranking, topics=TOPICS, texts=TEXTS) == []
    assert crafted_reasons(ranking=ranking, topics=TOPICS, texts={}) == []  # no stored text: nothing compared


def test_a_released_run_of_one_document_per_topic_is_flagged_after_the_commit(
        analysis_dataset, alice, django_capture_on_commit_callbacks):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from submissions.services import submission_create, submission_score_now

    from .conftest import N_TOPICS, qid, relevant_docs

    split = analysis_dataset.splits.get(name="test")
    text = "".join(f"{qid(i)} Q0 {relevant_docs(i)[0]} 1 1 anchors\n" for i in range(N_TOPICS))
    sub = submission_create(user=alice, split=split, upload=SimpleUploadedFile("a.txt", text.encode()), enqueue=False,
                            metadata={"system_name": "anchors", "family": "lexical", "visibility": "public"})
    with django_capture_on_commit_callbacks(execute=True):
        submission_score_now(sub.pk)
    row = Release.objects.get(submission=sub)
    assert row.crafted == [f"{N_TOPICS} of {N_TOPICS} topics hold one or two documents"]
    assert release_check_shape(release_id=row.pk) == row.crafted


def test_the_split_admin_links_its_ledger_with_the_alerts_not_yet_acknowledged(scored, alice, staff, analysis_dataset,
                                                                                settings):
    settings.LEXBOARD_LEDGER_IDENTITY_BITS = 1
    split = analysis_dataset.splits.get(name="test")
    scored("test", alice, "shifted", name="first")
    web = Client()
    web.force_login(staff)
    page = web.get(reverse("admin:catalogue_split_change", args=[split.pk])).content.decode()
    assert reverse("participants:ledger", args=[split.pk]) in page and "1 release</a> — 1 alert not acknowledged" in page


def test_a_release_stays_in_the_ledger_when_its_submission_is_deleted(scored, alice, staff, analysis_dataset):
    first = scored("test", alice, "shifted", name="first")
    Submission.objects.filter(pk=first.pk).delete()
    row = Release.objects.get()
    assert row.submission_id is None and row.result_id is None and row.bits == pytest.approx(BITS)
    web = Client()
    web.force_login(staff)
    assert "alice" in web.get(reverse("participants:ledger", args=[analysis_dataset.splits.get(name="test").pk])
                              ).content.decode()


def test_the_runs_of_one_new_identity_take_one_place_of_the_budget(scored, alice, bob, analysis_dataset, settings):
    settings.LEXBOARD_FIRST_RELEASE_BUDGET = 1
    split = analysis_dataset.splits.get(name="test")
    scored("test", alice, "shifted", name="alice's")
    first = scored("test", bob, "late", name="bob's first")
    second = scored("test", bob, "perfect", name="bob's second")  # also a first release for him: it waits too
    assert ReleaseWait.objects.count() == 2
    Release.objects.filter(split=split).update(day=Release.objects.get().day - timedelta(days=1))
    assert submissions_sweep()["budget_waits_judged"] == 2  # one place: his first, then his second (not first)
    assert result_of(first).released and result_of(second).released and not ReleaseWait.objects.exists()
    assert [r.first for r in Release.objects.filter(identity=f"user:{bob.pk}").order_by("pk")] == [True, False]
