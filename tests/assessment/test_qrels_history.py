"""The dataset page's history of judgments: versions, judgments added, Kendall's τ and the entries that moved."""

from __future__ import annotations

import pytest
from django.urls import reverse
from scipy.stats import kendalltau

from catalogue.services import qrels_version_add
from leaderboard.qrels_history import qrels_history
from submissions.models import Result, Submission
from submissions.services import qrels_version_publish_and_rescore, submission_rescore_on

from .conftest import RUN_A, RUN_B, submit

pytestmark = pytest.mark.django_db

#: q1's d11 and d14 (B's top two) and q3's d13 and d16 (B's) become relevant: B overtakes A.
NEW = {"q1": {"d1": 2, "d2": 1, "d11": 2, "d14": 1}, "q2": {"d3": 1}, "q3": {"d4": 1, "d5": 1, "d6": 1, "d13": 1,
                                                                                          "d16": 1},
       "q4": {"d7": 0}}


def test_the_history_compares_consecutive_boards(client, dev_split_runs):
    split, subs = dev_split_runs
    v2, _ = qrels_version_add(split=split, qrels=NEW, note="pool of A and B")
    qrels_version_publish_and_rescore(split=split, version=v2)
    for s in subs.values():
        submission_rescore_on(submission_id=s.pk, qrels_version_id=v2.pk)
    split.refresh_from_db()
    assert split.current_qrels == v2
    newest, first = qrels_history(split=split)
    assert (newest.version, first.version.version) == (v2, 1)
    assert (newest.added, newest.regraded, first.added) == (4, 0, None)
    old = {n: Result.objects.get(submission=s, qrels_version=first.version).primary_score for n, s in subs.items()}
    new = {n: Result.objects.get(submission=s, qrels_version=v2).primary_score for n, s in subs.items()}
    names = sorted(subs)
    assert newest.tau == -1.0 == pytest.approx(kendalltau([old[n] for n in names], [new[n] for n in names]).statistic, abs=1e-3)
    assert new["B"] > new["A"] and old["A"] > old["B"]
    assert newest.moved == [{"name": "B", "before": 2, "after": 1}, {"name": "A", "before": 1, "after": 2}]
    body = client.get(reverse("leaderboard:dataset", args=["tiny"]) + "?split=dev").content.decode()
    assert "Judgments over time" in body and "pool of A and B" in body and "B 2 → 1" in body


@pytest.fixture
def dev_split_runs(tiny_dataset, alice, bob):
    split = tiny_dataset.splits.get(name="dev")
    subs = {"A": submit(alice, split, RUN_A, "A"), "B": submit(bob, split, RUN_B, "B")}
    assert all(s.status == Submission.Status.SCORED for s in subs.values())
    return split, subs


def test_on_a_hidden_split_the_history_shows_counts_only(client, test_split, runs):
    v2, _ = qrels_version_add(split=test_split, qrels=NEW, note="pool")
    qrels_version_publish_and_rescore(split=test_split, version=v2)
    for s in runs.values():
        submission_rescore_on(submission_id=s.pk, qrels_version_id=v2.pk)
    held = Result.objects.get(submission=runs["B"], qrels_version=v2)
    Result.objects.filter(pk=held.pk).update(released=False)  # as the Ladder holds a result back
    test_split.refresh_from_db()
    newest, _ = qrels_history(split=test_split)
    # No τ and no entry that moved: after a small change they name the runs that hold the new documents.
    assert (newest.added, newest.common, newest.tau, newest.moved) == (4, 0, None, [])
    body = client.get(reverse("leaderboard:dataset", args=["tiny"]) + "?split=test").content.decode()
    assert "Judgments over time" in body and f"{held.primary_score:.4f}" not in body
    assert "Kendall" not in body and "counts only" in body


def test_on_a_hidden_split_a_version_adding_one_judgment_is_not_counted_exactly(client, test_split, runs):
    """One judgment added, told as "1 added" beside the version, names the size of the change that the entries'
    released values moved by; the counts of a hidden split are banded below 10 and two digits above
    (``disclosure.count_shown``). A public split shows the numbers."""
    one_more = {"q1": {"d1": 2, "d2": 1, "d11": 1}, "q2": {"d3": 1}, "q3": {"d4": 1, "d5": 1, "d6": 1},
                "q4": {"d7": 0}}
    test_split.min_judgment_batch = 20  # the default: one judgment is published only with a curator's reason
    test_split.save(update_fields=["min_judgment_batch"])
    v2, _ = qrels_version_add(split=test_split, qrels=one_more, note="one more")
    qrels_version_publish_and_rescore(split=test_split, version=v2, small_change_reason="a wrong judgment found")
    for s in runs.values():
        submission_rescore_on(submission_id=s.pk, qrels_version_id=v2.pk)
    test_split.refresh_from_db()
    newest, first = qrels_history(split=test_split)
    assert newest.added == 1  # what the module is given
    assert (newest.added_shown, newest.regraded_shown, newest.judgments_shown) == (
        "fewer than 10", "fewer than 10", "fewer than 10")
    body = client.get(reverse("leaderboard:dataset", args=["tiny"]) + "?split=test").content.decode()
    history = body[body.index("Judgments over time"):body.index("counts only")]
    assert '<td class="num">1</td>' not in history and "fewer than 10" in history
    assert "published as a small change: a wrong judgment found" in history


def test_counts_are_banded_on_hidden_splits_only(test_split, tiny_dataset):
    from submissions import disclosure

    dev = tiny_dataset.splits.get(name="dev")
    assert [disclosure.count_shown(n, split=test_split) for n in (0, 1, 9, 10, 775, 1234, None)] == [
        "fewer than 10", "fewer than 10", "fewer than 10", "about 10", "about 780", "about 1,200", "–"]
    assert [disclosure.count_shown(n, split=dev) for n in (1, 775, 1234)] == ["1", "775", "1,234"]
