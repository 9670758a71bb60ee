"""leaderboard_rows: who is on the board, in which order, with which rank, at what query cost."""

from __future__ import annotations

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from leaderboard.selectors import LeaderboardRow, home_datasets, leaderboard_rows, rank_rows
from submissions.models import Submission, live_q
from submissions.selectors import submission_ordinal


def _row(system, value, kind="scored"):
    return LeaderboardRow(
        rank=None, kind=kind, submission_id=None, system=system, owner="", family="",
        paper_url="", code_url="", date=None, scores={"R@10": value},
    )


def test_it_gives_ties_a_shared_rank_and_skips_the_next():
    rows = rank_rows([_row("a", 0.5), _row("b", 0.7), _row("c", 0.5), _row("d", 0.2)], measure="R@10")
    assert [(r.system, r.rank) for r in rows] == [("b", 1), ("a", 2), ("c", 2), ("d", 4)]


def test_it_places_reported_rows_by_value_without_a_rank():
    rows = rank_rows([_row("a", 0.5), _row("paper", 0.6, kind="reported"), _row("b", 0.4)], measure="R@10")
    assert [(r.system, r.rank) for r in rows] == [("paper", None), ("a", 1), ("b", 2)]


def test_it_puts_rows_lacking_the_measure_last_unranked():
    rows = rank_rows([_row("none", None), _row("a", 0.1)], measure="R@10")
    assert [(r.system, r.rank) for r in rows] == [("a", 1), ("none", None)]


def test_it_ranks_by_the_primary_measure(split_test, alice, make_entry):
    make_entry(split_test, alice, "low", {"R@10": 0.2, "MAP@10": 0.9})
    make_entry(split_test, alice, "high", {"R@10": 0.8, "MAP@10": 0.1})
    rows = leaderboard_rows(split=split_test)
    assert [(r.system, r.rank, r.kind) for r in rows] == [("high", 1, "scored"), ("low", 2, "scored")]


def test_it_sorts_by_another_measure_when_asked(split_test, alice, make_entry):
    make_entry(split_test, alice, "low", {"R@10": 0.2, "MAP@10": 0.9})
    make_entry(split_test, alice, "high", {"R@10": 0.8, "MAP@10": 0.1})
    rows = leaderboard_rows(split=split_test, sort="MAP@10")
    assert [r.system for r in rows] == ["low", "high"]
    assert rows[0].rank == 1


def test_it_ignores_a_sort_key_the_dataset_does_not_have(split_test, alice, make_entry):
    make_entry(split_test, alice, "a", {"R@10": 0.2})
    make_entry(split_test, alice, "b", {"R@10": 0.8})
    assert [r.system for r in leaderboard_rows(split=split_test, sort="DROP TABLE")] == ["b", "a"]


def test_it_shows_baselines_and_reported_rows(split_test, alice, staff, make_entry, reported):
    make_entry(split_test, staff, "BM25", {"R@10": 0.5}, is_baseline=True)
    make_entry(split_test, alice, "mine", {"R@10": 0.4})
    rows = leaderboard_rows(split=split_test)
    kinds = {r.system: (r.kind, r.rank) for r in rows}
    assert kinds == {"BM25 (paper) & co_1": ("reported", None), "BM25": ("baseline", 1), "mine": ("scored", 2)}


def test_it_shows_reported_rows_only_on_the_test_split(split_dev, reported):
    assert leaderboard_rows(split=split_dev) == []


def test_it_leaves_out_unscored_withdrawn_hidden_and_stale_entries(split_test, alice, make_entry):
    from django.utils import timezone

    from catalogue.services import qrels_version_add

    make_entry(split_test, alice, "queued", {}, status="queued")
    make_entry(split_test, alice, "failed", {}, status="failed")
    make_entry(split_test, alice, "withdrawn", {"R@10": 0.1}, withdrawn_at=timezone.now())
    make_entry(split_test, alice, "hidden", {"R@10": 0.1}, hidden_by_curator=True)
    old = split_test.current_qrels
    qrels_version_add(split=split_test, qrels={"q1": {"d1": 1}}, publish=True)
    split_test.refresh_from_db()
    make_entry(split_test, alice, "on old qrels", {"R@10": 0.1}, qrels_version=old)
    make_entry(split_test, alice, "current", {"R@10": 0.1})
    assert [r.system for r in leaderboard_rows(split=split_test)] == ["current"]


def test_it_shows_private_entries_only_to_their_owner(split_test, alice, bob, make_entry):
    make_entry(split_test, alice, "public", {"R@10": 0.3})
    make_entry(split_test, alice, "secret", {"R@10": 0.9}, visibility="private")
    assert [r.system for r in leaderboard_rows(split=split_test)] == ["public"]
    assert [r.system for r in leaderboard_rows(split=split_test, user=bob)] == ["public"]
    own = leaderboard_rows(split=split_test, user=alice)
    assert [(r.system, r.rank, r.is_private) for r in own] == [("secret", 1, True), ("public", 2, False)]
    # The owner's view did not leak into the cached public rows.
    assert [r.system for r in leaderboard_rows(split=split_test)] == ["public"]


def test_it_shows_anonymous_entries_as_anonymous(split_test, alice, make_entry):
    make_entry(split_test, alice, "shy", {"R@10": 0.3}, visibility="anonymous", team="Alice Lab",
               paper_url="https://example.org/p")
    (row,) = leaderboard_rows(split=split_test)
    assert row.owner == "anonymous"
    assert row.team == "" and row.paper_url == ""
    assert "alice" not in str(row.to_dict()).lower()


def test_it_shows_a_new_score_once_the_cache_version_is_bumped(split_test, alice, make_entry):
    make_entry(split_test, alice, "first", {"R@10": 0.3})
    assert len(leaderboard_rows(split=split_test)) == 1
    make_entry(split_test, alice, "second", {"R@10": 0.5})  # bumps cache_version like the scorer must
    assert [r.system for r in leaderboard_rows(split=split_test)] == ["second", "first"]


def test_it_serves_public_rows_from_the_cache(split_test, alice, make_entry):
    make_entry(split_test, alice, "first", {"R@10": 0.3})
    leaderboard_rows(split=split_test)
    with CaptureQueriesContext(connection) as ctx:
        rows = leaderboard_rows(split=split_test, sort="MAP@10")
    # Only the papers' reported rows are read again.
    assert [q["sql"] for q in ctx.captured_queries if "submissions_result" in q["sql"]] == []
    assert len(ctx.captured_queries) == 1
    assert [r.system for r in rows] == ["first"]


def test_it_shows_an_edited_reported_result_at_once(split_test, reported):
    assert leaderboard_rows(split=split_test)[0].scores["R@10"] == 0.55
    reported.scores = {"R@10": 0.6}
    reported.save()
    assert leaderboard_rows(split=split_test)[0].scores["R@10"] == 0.6


def _count_queries(split, user, fresh_cache):
    fresh_cache()
    with CaptureQueriesContext(connection) as ctx:
        rows = leaderboard_rows(split=split, user=user)
    return len(ctx.captured_queries), len(rows)


def test_it_runs_a_constant_number_of_queries(split_test, alice, bob, make_entry, reported, fresh_cache):
    from accounts.models import Profile

    Profile.objects.create(user=bob, display_name="Bob B.")
    for i in range(5):
        make_entry(split_test, [alice, bob][i % 2], f"s{i}", {"R@10": i / 100}, visibility=["public", "private", "anonymous"][i % 3])
    few, n_few = _count_queries(split_test, alice, fresh_cache)
    for i in range(45):
        make_entry(split_test, [alice, bob][i % 2], f"t{i}", {"R@10": i / 100}, visibility=["public", "private", "anonymous"][i % 3])
    many, n_many = _count_queries(split_test, alice, fresh_cache)
    assert n_many > n_few + 30
    assert few == many <= 3


def test_it_summarises_datasets_for_the_home_page(split_test, alice, make_entry, reported):
    (bench,) = home_datasets()
    (summary,) = bench.datasets
    assert summary.best.kind == "reported"  # nothing scored yet: the paper's best
    make_entry(split_test, alice, "mine", {"R@10": 0.4})
    (bench,) = home_datasets()
    (summary,) = bench.datasets
    assert (summary.best.system, summary.n_entries, summary.n_reported) == ("mine", 1, 1)


def test_each_test_entry_says_which_try_of_its_owner_it_was(client, split_test, split_dev, alice, bob, make_entry,
                                                             staff):
    """Issue 14: how many test submissions its owner had made when it was sent, counted like the quota."""
    make_entry(split_test, alice, "a failed try", {}, status="failed")
    make_entry(split_test, alice, "our fault", {}, status="failed", failure_kind=Submission.FailureKind.SERVICE)
    first = make_entry(split_test, alice, "alice 2nd", {"R@10": 0.4}, visibility="public")
    make_entry(split_test, bob, "bob 1st", {"R@10": 0.3}, visibility="public")
    make_entry(split_test, alice, "alice 3rd", {"R@10": 0.5}, visibility="public")
    make_entry(split_test, staff, "BM25", {"R@10": 0.2}, is_baseline=True)
    make_entry(split_test, bob, "bob anonymous", {"R@10": 0.1}, visibility="anonymous")
    make_entry(split_dev, alice, "dev", {"R@10": 0.2}, visibility="public")
    rows = {r.system: r.owner_submission_number for r in leaderboard_rows(split=split_test)}
    assert rows == {"alice 2nd": 2, "bob 1st": 1, "alice 3rd": 3, "BM25": None, "bob anonymous": None}
    assert submission_ordinal(submission=first) == 2  # the submission page says the same
    assert [r.owner_submission_number for r in leaderboard_rows(split=split_dev)] == [None]
    page = client.get(split_test.get_absolute_url()).content.decode()
    assert "try 3" in page and "try 2" in page
    api = client.get("/api/v1/datasets/tiny/leaderboard?split=test").json()
    assert {e["system"]: e["owner_submission_number"] for e in api["entries"]}["alice 3rd"] == 3


def test_the_membership_rule_in_python_agrees_with_its_queries(tiny_dataset, alice, make_entry):
    """``Submission.is_live`` / ``is_public`` (a row already loaded) say what ``live_q`` / ``on_board_q`` say in
    SQL, for every visibility, withdrawn or not, hidden by a curator or not (one rule, two spellings, held equal)."""
    split = tiny_dataset.splits.get(name="dev")
    entries = [make_entry(split, alice, f"{visibility} {withdrawn} {hidden}", {"R@10": 0.5}, visibility=visibility,
                          withdrawn_at=timezone.now() if withdrawn else None, hidden_by_curator=hidden)
               for visibility in Submission.Visibility.values for withdrawn in (False, True) for hidden in (False, True)]
    live = set(Submission.objects.filter(live_q()).values_list("pk", flat=True))
    on_board = set(Submission.objects.on_board().values_list("pk", flat=True))
    assert len(live) == 3 and len(on_board) == 2
    for entry in entries:
        assert entry.is_live == (entry.pk in live), entry.system_name
        assert entry.is_public == (entry.pk in on_board), entry.system_name
