"""Provenance of an entry: the vocabulary, the models' lines, the "disclosed" rule, the old flag's migration, the
refusal of a split that requires it, edits that re-score nothing, and a fusion's provenance from its parts."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from submissions import selectors
from submissions.errors import UploadRefused
from submissions.models import Result, StatusEvent, Submission
from submissions.provenance import fused_provenance, parse_models, provenance_gaps
from submissions.services import (
    METADATA_FIELDS,
    FusionRefused,
    fusion_create,
    submission_create,
    submission_score_now,
    submission_update_metadata,
)

from .conftest import METADATA, good_run, upload

STATED = {"training_data": "other_legal", "could_have_seen": "no", "models_used": "BAAI/bge-m3 MIT"}


def make(user, split, n: int = 0, *, is_baseline: bool = False, **metadata) -> Submission:
    return submission_create(user=user, split=split, upload=upload(good_run(n)), enqueue=False,
                             is_baseline=is_baseline, metadata={**METADATA, **metadata})


def edit(sub: Submission, **changes) -> Submission:
    """What the edit form and the API's PATCH send: every field, some changed."""
    return submission_update_metadata(submission=sub, data={
        **{name: getattr(sub, name) for name in METADATA_FIELDS}, **changes})


# --- the rule ---------------------------------------------------------------------------------------------------


def test_models_are_read_line_by_line_and_each_problem_names_its_line(db, alice, tiny_dataset):
    assert [(m.id, m.licence) for m in parse_models("BAAI/bge-m3  MIT\n\nopenai:gpt-4o proprietary\n")] == [
        ("BAAI/bge-m3", "MIT"), ("openai:gpt-4o", "proprietary")]
    with pytest.raises(UploadRefused) as refused:
        make(alice, tiny_dataset.splits.get(name="dev"), models_used="BAAI/bge-m3 MIT\nbge\nBAAI/bge-m3 MIT")
    reasons = " ".join(d["reason"] for d in refused.value.details)
    assert "models_used: line 2: 'bge' has no licence" in reasons
    assert "line 3" not in reasons  # a model listed twice is kept once, not refused
    assert not Submission.objects.exists()


def test_an_entry_is_disclosed_when_everything_is_stated(db):
    assert not provenance_gaps(training_data="none", could_have_seen="no", models_used="")
    assert not provenance_gaps(**STATED)
    fields = lambda **kw: [g.field for g in provenance_gaps(**{**STATED, **kw})]  # noqa: E731
    assert fields(training_data="unknown") == ["training_data"]
    assert fields(could_have_seen="unknown") == ["could_have_seen"]
    assert fields(models_used="") == ["models_used"]  # trained on something: which models?
    assert fields(models_used="BAAI/bge-m3 unknown") == ["models_used"]  # a licence that says nothing


def test_the_free_texts_are_bounded_at_every_door(db, alice, tiny_dataset):
    with pytest.raises(UploadRefused) as refused:
        make(alice, tiny_dataset.splits.get(name="dev"), training_data_note="x" * 501)
    assert refused.value.details == [{"line": None, "reason": "training_data_note: at most 500 characters (got 501); "
                                                              "shorten it"}]


def test_the_models_are_stored_in_one_form(db, alice, tiny_dataset):
    sub = make(alice, tiny_dataset.splits.get(name="dev"), models_used="  BAAI/bge-m3   MIT  \n\n e5  Apache-2.0\n")
    assert sub.models_used == "BAAI/bge-m3 MIT\ne5 Apache-2.0"


# --- the old yes/no flag -------------------------------------------------------------------------------------------

BEFORE = ("submissions", "0014_released_score")


def _migrate(targets) -> None:
    MigrationExecutor(connection).migrate(targets)


def _flags() -> dict[int, bool]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT id, used_training_data FROM submissions_submission")
        return {pk: bool(flag) for pk, flag in cursor.fetchall()}


@pytest.mark.django_db(transaction=True)
def test_the_migration_maps_the_old_flag_both_ways(tiny_dataset, alice):
    split = tiny_dataset.splits.get(name="dev")
    trained = make(alice, split, 1, training_data="train_split")
    legal = make(alice, split, 2, training_data="other_legal", models_used="e5 MIT")
    unknown = make(alice, split, 3)
    leaves = MigrationExecutor(connection).loader.graph.leaf_nodes()
    _migrate([BEFORE if app == "submissions" else (app, name) for app, name in leaves])
    # Backwards: only the train split was "used the dataset's training data".
    assert _flags() == {trained.pk: True, legal.pk: False, unknown.pk: False}
    with connection.cursor() as cursor:
        cursor.execute("UPDATE submissions_submission SET used_training_data = %s WHERE id = %s", [True, unknown.pk])
    _migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
    # Forwards: yes is the train split; no never said what else, so it is unknown (other_legal is lost going back).
    assert dict(Submission.objects.values_list("pk", "training_data")) == {
        trained.pk: "train_split", legal.pk: "unknown", unknown.pk: "train_split"}


# --- a split that requires it ---------------------------------------------------------------------------------------


def test_a_split_that_requires_provenance_refuses_an_upload_without_it_before_any_slot_is_used(alice, tiny_dataset):
    split = tiny_dataset.splits.get(name="test")
    split.requires_provenance = True
    split.save()
    before = selectors.submission_quota(user=alice, split=split).daily_remaining
    with pytest.raises(UploadRefused) as refused:
        make(alice, split, training_data="web_scale")
    message = refused.value.message
    assert "asks every entry to state its provenance" in message and "nothing was counted" in message
    assert [d["reason"].split(":")[0] for d in refused.value.details] == ["could_have_seen", "models_used"]
    assert "say whether the system could have seen" in message and "e.g. `BAAI/bge-m3 MIT`" in message
    assert not Submission.objects.exists()
    assert selectors.submission_quota(user=alice, split=split).daily_remaining == before
    assert make(alice, split, **STATED).disclosed
    # A curator's baseline is not asked (nor is another split).
    assert not make(alice, split, 2, is_baseline=True).disclosed
    assert not make(alice, tiny_dataset.splits.get(name="dev"), 3).disclosed


def test_editing_provenance_rescores_nothing(alice, tiny_dataset):
    sub = submission_score_now(make(alice, tiny_dataset.splits.get(name="dev")).pk)
    assert sub.status == "scored" and not sub.disclosed
    scored_at, results, events = sub.scored_at, list(Result.objects.values_list("pk", "scores")), \
        StatusEvent.objects.filter(submission=sub).count()
    edit(sub, **STATED)
    sub.refresh_from_db()
    assert sub.disclosed and sub.training_data == "other_legal"
    assert (sub.status, sub.scored_at) == ("scored", scored_at)
    assert list(Result.objects.values_list("pk", "scores")) == results
    assert StatusEvent.objects.filter(submission=sub).count() == events


def test_on_a_split_that_requires_it_an_edit_may_not_unstate_provenance(alice, tiny_dataset):
    split = tiny_dataset.splits.get(name="test")
    old = make(alice, split, 1)  # uploaded before the split asked: it keeps what it had
    split.requires_provenance = True
    split.save()
    sub = make(alice, split, 2, **STATED)
    with pytest.raises(UploadRefused) as refused:
        edit(sub, could_have_seen="unknown")
    assert refused.value.details[0]["reason"].startswith("could_have_seen: ")
    assert Submission.objects.get(pk=sub.pk).could_have_seen == "no"
    edit(old, description="tuned")  # not its provenance: allowed


# --- fusion ---------------------------------------------------------------------------------------------------------


def test_a_fusion_states_the_broadest_provenance_of_its_parts(alice, tiny_dataset):
    split = tiny_dataset.splits.get(name="dev")
    a = submission_score_now(make(alice, split, 1, training_data="web_scale", could_have_seen="corpus",
                                  models_used="e5 MIT").pk)
    b = submission_score_now(make(alice, split, 2, training_data="train_split", could_have_seen="test_questions",
                                  models_used="bge Apache-2.0\ne5 MIT").pk)
    fusion = fusion_create(user=alice, parts=[a, b])
    assert (fusion.training_data, fusion.could_have_seen, fusion.models_used) == (
        "train_split", "both", "e5 MIT\nbge Apache-2.0")
    assert fusion.disclosed and "Derived from the fused entries" in fusion.training_data_note
    c = submission_score_now(make(alice, split, 3).pk)  # states nothing: the fusion cannot either
    assert fused_provenance([a, c])["training_data"] == "unknown"
    assert fused_provenance([a, c])["could_have_seen"] == "unknown"


def test_a_split_that_requires_provenance_refuses_a_fusion_of_parts_that_do_not_state_it(alice, tiny_dataset):
    split = tiny_dataset.splits.get(name="dev")
    a = submission_score_now(make(alice, split, 1, **STATED).pk)
    b = submission_score_now(make(alice, split, 2).pk)
    split.requires_provenance = True
    split.save()
    with pytest.raises(FusionRefused) as refused:
        fusion_create(user=alice, parts=[a, b])
    assert f"#{b.pk} (training_data, could_have_seen)" in str(refused.value)
    assert Submission.objects.count() == 2
