"""New judgments on a hidden split, read off the public board: small changes are refused, batched, or published
with a curator's stated reason.

The attack: anyone saves the board (or reads the snapshot taken at each publication) before a new judgments
version and compares after. With one changed judgment, every released entry that crosses a grid step, and its
direction, is a fact about that one judgment and that entry's run; an attacker knows their own runs (which
documents they rank where, for which topic), so the moves of their entries decode the judgment: its topic, its
document, relevant or not. A batch of many changes moves each entry by their sum, which decodes no single one.

Through the real services and pages on the analysis dataset of ``tests/analysis/conftest.py``: a hidden ``test``
split (Ladder on, 24 topics, R@10 primary) with a released board of three entries, and a public ``dev`` split.
"""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from catalogue.models import QrelsVersion, Split
from catalogue.services import SmallJudgmentChange, qrels_version_add
from snapshots.models import Snapshot
from submissions.models import Submission
from submissions.services import qrels_version_publish_and_rescore, submission_rescore_on
from tests.analysis import conftest as analysis
from tests.users import verified

analysis_dataset = analysis.analysis_dataset
scored = analysis.scored
pytestmark = [pytest.mark.django_db, pytest.mark.own_cache, pytest.mark.private_storage]


def _judgments() -> dict[str, dict[str, int]]:
    return {analysis.qid(i): {d: 1 for d in analysis.relevant_docs(i)} for i in range(analysis.N_TOPICS)}


def _outside(i: int, k: int) -> str:
    """The k-th document of the corpus that topic i does not judge relevant (what a change makes relevant)."""
    return [f"doc{d}" for d in range(1, analysis.N_DOCS + 1) if f"doc{d}" not in analysis.relevant_docs(i)][k]


def _one_change() -> dict[str, dict[str, int]]:
    """v1 plus one judgment: a document of topic 15 that one entry ranks first and another ranks tenth."""
    qrels = _judgments()
    qrels[analysis.qid(15)][_outside(15, 0)] = 1
    return qrels


def _batch(n: int) -> dict[str, dict[str, int]]:
    """v1 with ``n`` relevance changes mixed over the topics: added, removed and regraded judgments (each crossing
    the relevance threshold: a relevant document added, removed, or regraded to not relevant)."""
    qrels = _judgments()
    for k in range(n):
        i = k % analysis.N_TOPICS
        docs = qrels[analysis.qid(i)]
        if k % 3 == 0:
            docs[_outside(i, 30 + k // analysis.N_TOPICS)] = 1  # added
        elif k % 3 == 1 and len(docs) > 1:
            docs.pop(sorted(docs)[-1])  # removed
        else:
            docs[sorted(docs)[0]] = 0  # regraded to not relevant
    return qrels


@pytest.fixture
def board(scored, alice, bob, django_user_model, analysis_dataset):
    """The hidden split with three released entries (alice's, bob's, carol's), scored on v1."""
    carol = verified(django_user_model.objects.create_user("carol", "carol@example.org", "correct horse battery"))
    entries = [scored("test", alice, "perfect", name="alice-perfect"),
               scored("test", bob, "shifted", name="bob-shifted"),
               scored("test", carol, "random", seed=3, name="carol-random")]
    split = analysis_dataset.splits.get(name="test")
    assert split.min_judgment_batch == 20  # the default
    return split, entries


def _page(client) -> str:
    return client.get(reverse("leaderboard:dataset", args=["anal"]) + "?split=test").content.decode()


def _rescore(split: Split, version: QrelsVersion, entries: list[Submission]) -> None:
    """What the workers do after commit: each entry rescored on the staged version, then the switch."""
    for sub in entries:
        assert submission_rescore_on(submission_id=sub.pk, qrels_version_id=version.pk) == "stored"
    split.refresh_from_db()


def test_a_one_judgment_change_on_a_hidden_split_is_refused_and_the_board_stays(client, board):
    split, entries = board
    before_page = _page(client)
    v1, cache_version = split.current_qrels, split.cache_version
    snapshots = Snapshot.objects.count()

    with pytest.raises(SmallJudgmentChange) as refused:
        qrels_version_add(split=split, qrels=_one_change(), note="one more", publish=True)
    message = str(refused.value)
    assert "changes 1 judgment against the current v1" in message and "at least 20" in message
    assert "Gather more judgments" in message and "small change" in message

    # Staged the curator's way (stored first, then published): refused at the publication, nothing written.
    v2, created = qrels_version_add(split=split, qrels=_one_change(), note="one more")
    assert created and v2.version == 2
    with pytest.raises(SmallJudgmentChange, match="changes 1 judgment"):
        qrels_version_publish_and_rescore(split=split, version=v2)
    split.refresh_from_db()
    assert (split.current_qrels, split.pending_qrels, split.cache_version) == (v1, None, cache_version)
    assert QrelsVersion.objects.filter(split=split).count() == 2  # v2 stored by the add above, never published
    assert Snapshot.objects.count() == snapshots
    assert _page(client) == before_page, "the board moved: its entries' steps would decode the judgment"


def test_a_small_change_is_published_with_a_curators_reason_recorded_and_shown(client, board, staff):
    split, entries = board
    snapshots = Snapshot.objects.count()
    v2, _ = qrels_version_add(split=split, qrels=_one_change(), note="errata")

    qrels_version_publish_and_rescore(split=split, version=v2, user=staff,
                                      small_change_reason="a judgment the annotators flagged as wrong")
    _rescore(split, v2, entries)

    assert split.current_qrels == v2
    v2.refresh_from_db()
    assert (v2.small_change_reason, v2.small_change_by) == ("a judgment the annotators flagged as wrong", staff)
    assert Snapshot.objects.count() == snapshots + 1  # the board on v1, kept
    history = _page(client).split('id="qrels-history"')[1].split("</section>")[0]
    assert "published as a small change: a judgment the annotators flagged as wrong" in history


def test_a_batch_of_the_minimum_mixed_changes_is_published(client, board):
    split, entries = board
    v1 = split.current_qrels
    v2, _ = qrels_version_add(split=split, qrels=_batch(20), note="pool of 12 runs")
    assert v2.judgments_changed_from(v1) == 20
    qrels_version_publish_and_rescore(split=split, version=v2)
    _rescore(split, v2, entries)
    v2.refresh_from_db()
    assert split.current_qrels == v2 and v2.small_change_reason == ""

    v3, _ = qrels_version_add(split=split, qrels=_batch(19), note="one fewer")
    with pytest.raises(SmallJudgmentChange, match="changes 1 judgment against the current v2"):
        qrels_version_publish_and_rescore(split=split, version=v3)


def test_a_public_split_publishes_any_change(scored, alice, analysis_dataset):
    dev = analysis_dataset.splits.get(name="dev")
    entry = scored("dev", alice, "perfect", name="alice-dev")
    v2, _ = qrels_version_add(split=dev, qrels=_one_change(), note="one more")
    qrels_version_publish_and_rescore(split=dev, version=v2)
    _rescore(dev, v2, [entry])
    assert dev.current_qrels == v2


def test_the_first_version_of_a_hidden_split_and_a_split_set_to_zero_are_never_refused(analysis_dataset):
    fresh = Split.objects.create(dataset=analysis_dataset, name="fresh", kind="test", hidden=True)
    v1, _ = qrels_version_add(split=fresh, qrels={"q1": {"d1": 1}})  # nothing to compare with
    fresh.refresh_from_db()
    assert fresh.current_qrels == v1
    Split.objects.filter(pk=fresh.pk).update(min_judgment_batch=0)
    fresh.refresh_from_db()
    v2, _ = qrels_version_add(split=fresh, qrels={"q1": {"d1": 2}}, publish=True)
    fresh.refresh_from_db()
    assert fresh.current_qrels == v2 and v2.small_change_reason == ""


def test_the_command_refuses_a_small_change_and_takes_a_reason(board, tmp_path):
    split, entries = board
    qrels = tmp_path / "test.qrels"
    qrels.write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in _one_change().items() for d, g in docs.items()))
    topics = tmp_path / "topics.tsv"
    topics.write_text("".join(f"{t.qid}\t{t.text}\t{t.category}\n" for t in split.topics.all()))
    args = ["import_dataset", "--format", "trec", "--dataset", "anal", "--split", "test", "--hidden",
            "--topics", str(topics), "--qrels", str(qrels), "--publish"]

    with pytest.raises(CommandError) as refused:
        call_command(*args)
    assert "refused, nothing was written" in str(refused.value)
    assert "changes 1 judgment" in str(refused.value) and '--small-change-reason "TEXT"' in str(refused.value)
    assert QrelsVersion.objects.filter(split=split).count() == 1

    call_command(*args, "--small-change-reason", "an article id mistyped in the release")
    split.refresh_from_db()
    staged = split.pending_qrels
    assert staged is not None and staged.small_change_reason == "an article id mistyped in the release"


def _padded(relevant: int, non_relevant: int, *, topics: int = analysis.N_TOPICS) -> dict[str, dict[str, int]]:
    """v1 plus ``relevant`` relevant judgments and ``non_relevant`` grade-0 ones, spread over ``topics`` topics."""
    qrels = _judgments()
    order = [15] + [i for i in range(analysis.N_TOPICS) if i != 15]
    for k in range(relevant + non_relevant):
        i = order[k % topics]
        qrels[analysis.qid(i)][_outside(i, 1 + k // topics)] = 1 if k < relevant else 0
    return qrels


def test_padding_one_relevance_change_with_non_relevant_judgments_makes_no_batch(client, board):
    """#37: a version of 1 relevant + 19 non-relevant judgments was published without a reason as a "batch of 20",
    and the one relevance change was read off the board (each entry's move is that one judgment's effect). The rule
    counts relevance changes (a grade crossing the threshold) and topics touched, not judgments."""
    split, entries = board
    before_page, v1 = _page(client), split.current_qrels
    v2, _ = qrels_version_add(split=split, qrels=_padded(1, 19), note="pool: one relevant, 19 not")
    assert v2.judgments_changed_from(v1) == 20  # what the rule counted before
    with pytest.raises(SmallJudgmentChange) as refused:
        qrels_version_publish_and_rescore(split=split, version=v2)
    message = str(refused.value)
    assert "changes 1 judgment against the current v1" in message and "on 1 topic" in message
    assert "19 more judgments below the relevance threshold" in message
    split.refresh_from_db()
    assert split.current_qrels == v1 and split.pending_qrels is None
    assert _page(client) == before_page, "the board moved on one relevance change"


def test_a_batch_of_relevance_changes_on_too_few_topics_is_refused(board):
    """K changes on one topic move a run built on that topic by the topic's net change: a batch spreads over
    topics. Twenty relevant documents on two topics are refused; on twenty topics published."""
    split, entries = board
    v2, _ = qrels_version_add(split=split, qrels=_padded(20, 0, topics=2), note="two topics")
    with pytest.raises(SmallJudgmentChange, match=r"changes 20 judgments .* on 2 topics"):
        qrels_version_publish_and_rescore(split=split, version=v2)
    v3, _ = qrels_version_add(split=split, qrels=_padded(20, 0), note="twenty topics")
    qrels_version_publish_and_rescore(split=split, version=v3)
    _rescore(split, v3, entries)
    assert split.current_qrels == v3 and v3.small_change_reason == ""


def _board_values(client) -> dict[str, dict]:
    entries = client.get(reverse("api:leaderboard", args=["anal"]) + "?split=test").json()["entries"]
    return {e["system"]: e["scores"] for e in entries}


def test_a_version_of_non_relevant_judgments_only_moves_nothing_and_is_published(client, board):
    split, entries = board
    before = _board_values(client)
    v2, _ = qrels_version_add(split=split, qrels=_padded(0, 7), note="seven judged not relevant")
    qrels_version_publish_and_rescore(split=split, version=v2)
    _rescore(split, v2, entries)
    assert split.current_qrels == v2 and v2.small_change_reason == ""
    assert _board_values(client) == before and len(before) == 3
