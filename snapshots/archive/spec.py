"""What an archive holds: the models, in the order they are imported, each filtered to the exported datasets.

One list (:data:`ARCHIVED`) says which models travel; :data:`EXCLUDED` names every model that points at one of
them and does not travel, with the reason. ``tests/snapshots/test_archive_spec.py`` fails on a model that points
at an archived model (a dataset, split, submission, result, …) and is in neither list, so a model added later is
decided about, not forgotten. Fields added later to an archived model travel without an edit: records are
Django's serialization of the whole row.

Order: a model comes after the models its required foreign keys point at. Nullable links to rows not imported
yet (a split's current qrels version, a submission's ``replaces``, a judgment's ``superseded_by``) are set once
every row is in (:mod:`.reader`), so cycles need no special case.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.apps import apps
from django.db import models

#: What each model's hidden fields become when an archive leaves the hidden material out (``--omit-hidden``).
OMITTED_VALUE = "omitted"
#: In clear, a hidden field carries what the site shows an anonymous visitor (:mod:`.released`), or nothing.


@dataclass(frozen=True)
class ModelSpec:
    """One archived model.

    ``scope`` is the lookup from the model to its dataset (``"split__dataset"``); ``split`` the lookup to the
    split whose ``hidden`` flag decides whether ``hidden_fields`` are hidden material (labels, or values derived
    from them finer than the board released). ``dropped`` fields never leave the host (secrets, personal data),
    each with its reason; the importing host gives them their defaults. ``identities`` hold ``user:<id>`` or
    ``team:<id>`` strings, remapped like foreign keys. ``hidden_rows``: on a hidden split the whole row is hidden
    material (a judgment pool's items tell, by what they leave out, which documents were judged already).
    """

    label: str
    scope: str
    split: str | None = None
    hidden_fields: tuple[str, ...] = ()
    dropped: dict[str, str] = field(default_factory=dict)
    identities: tuple[str, ...] = ()
    hidden_rows: bool = False

    @property
    def model(self) -> type[models.Model]:
        return apps.get_model(self.label)

    @property
    def member(self) -> str:
        return f"data/{self.label}.jsonl"


#: The benchmark row itself travels too (one record); an importing host that has the slug already reuses it.
BENCHMARK = "catalogue.Benchmark"

ARCHIVED: tuple[ModelSpec, ...] = (
    ModelSpec("catalogue.Dataset", scope=""),
    ModelSpec("catalogue.Corpus", scope="dataset"),
    ModelSpec("catalogue.Split", scope="dataset"),
    ModelSpec("catalogue.Topic", scope="split__dataset"),
    # The labels themselves; their checksum (a guess at the labels is checked against it) and exact counts (the
    # qrels history shows them banded).
    ModelSpec("catalogue.QrelsVersion", scope="split__dataset", split="split",
              hidden_fields=("qrels_gz", "sha256", "n_judgments", "n_relevant")),
    ModelSpec("catalogue.ReportedResult", scope="dataset"),
    # The data terms travel with their versions (the importing host asks its own participants to accept them).
    ModelSpec("catalogue.DataTerms", scope="dataset", dropped={
        "created_by": "the curator account that typed a version in is this host's staff, not a participant"}),
    # The partition of a shared task's topics is never shown (campaigns/models.py), nor what draws it again
    # (``Phase.draw_public(topics, share=, seed=)``): the seed, and the share past the page's whole percent.
    ModelSpec("campaigns.Phase", scope="split__dataset", split="split",
              hidden_fields=("public_qids", "seed", "public_share")),
    ModelSpec("campaigns.Team", scope="phase__split__dataset", dropped={
        "invite_token": "a capability: whoever holds the link may join the team; the new host makes a new one"}),
    ModelSpec("campaigns.Membership", scope="team__phase__split__dataset"),
    ModelSpec("campaigns.PrivateBoard", scope="phase__split__dataset"),
    # Warnings that count against the labels are never shown on a hidden split (disclosure.budget_warnings).
    ModelSpec("submissions.Submission", scope="split__dataset", split="split",
              hidden_fields=("scores_disagree", "warnings")),
    ModelSpec("submissions.StatusEvent", scope="submission__split__dataset"),
    # Exact means and per-query values of a hidden split are finer than anything its board released; the grid
    # value of a result the Ladder kept back was released to no one; the Ladder's message to the owner names
    # their best; the evaluated topics of a shared task's part count its judged topics.
    ModelSpec("submissions.Result", scope="submission__split__dataset", split="submission__split",
              hidden_fields=("scores", "primary_score", "per_query", "ladder_p", "released_score", "released_step",
                             "ladder_message", "warnings", "n_queries")),
    ModelSpec("submissions.ResultPart", scope="submission__split__dataset", split="submission__split",
              hidden_fields=("scores", "primary_score", "per_query", "n_queries")),
    ModelSpec("submissions.LadderBest", scope="split__dataset"),
    ModelSpec("submissions.ReleasePolicy", scope="split__dataset"),
    ModelSpec("submissions.Release", scope="split__dataset", identities=("identity",)),
    ModelSpec("submissions.Verdict", scope="split__dataset", identities=("identity",)),
    ModelSpec("submissions.ReleaseWait", scope="split__dataset", identities=("identity",)),
    ModelSpec("submissions.LedgerAlert", scope="split__dataset", identities=("identity",)),
    # Judging a hidden split, whole rows: a grade is a label, a pool's statistics count relevant documents, and
    # its items, built "minus what is judged already", tell by their gaps which documents the qrels hold.
    ModelSpec("assessment.Pool", scope="split__dataset", split="split", hidden_rows=True),
    ModelSpec("assessment.PoolItem", scope="pool__split__dataset", split="pool__split", hidden_rows=True),
    ModelSpec("assessment.Assignment", scope="pool__split__dataset", split="pool__split", hidden_rows=True),
    ModelSpec("assessment.Judgment", scope="item__pool__split__dataset", split="item__pool__split",
              hidden_rows=True),
    ModelSpec("sandbox.SplitSandbox", scope="split__dataset"),
    # Last: a snapshot is inserted once and never updated (a database trigger refuses), so everything it
    # points at is in by then.
    ModelSpec("snapshots.Snapshot", scope="split__dataset"),
)

#: Models that point at an archived model and stay on their host, with the reason (docs/archive.md repeats it).
EXCLUDED: dict[str, str] = {
    "campaigns.Invitation": "pending e-mail invitations: personal addresses and join tokens; teams invite again",
    "sandbox.SandboxRun": "a run of a participant's container image on this host's sandbox; the images (often "
                          "gigabytes, host-specific) stay, the submissions those runs made travel as entries "
                          "(their board mark 'reproduced' does not)",
    "accounts.ParticipantApproval": "who may upload is the new host's curators' decision; participants ask again",
    "snapshots.SnapshotEntryMap": "written by the import itself from the archive's snapshot-entries member",
    "snapshots.ArchiveImport": "the importing host's own record of an import",
    "submissions.UploadSlot": "a signed address for one upload to this host's object storage, valid an hour; the "
                              "submission it made travels as an entry",
    "accounts.TermsAcceptance": "who accepted a dataset's terms on this host: its own legal record, with e-mail "
                                "addresses (its curators export it as CSV); participants accept again on the new host",
}

#: The user model's rows travel as accounts.jsonl (username and public display name only; see writer).
USER_LABEL = "auth.User"


def related_label(f: Any) -> str | None:
    """The label of the model a relation field points at ("catalogue.Split"), None for another field."""
    target = f.related_model if f.is_relation else None
    if target is None or isinstance(target, str):
        return None
    return str(target._meta.label)


def spec_of(label: str) -> ModelSpec:
    for spec in ARCHIVED:
        if spec.label == label:
            return spec
    raise KeyError(label)


def archived_labels() -> set[str]:
    return {BENCHMARK, *(spec.label for spec in ARCHIVED)}


def unaccounted_models() -> list[str]:
    """Models with a link to an archived model that are neither archived nor excluded (should be empty)."""
    archived = archived_labels()
    out = []
    for model in apps.get_models():
        label = model._meta.label
        if label in archived or label in EXCLUDED:
            continue
        targets = {related_label(f) for f in model._meta.get_fields() if f.concrete} - {None}
        if targets & (archived - {BENCHMARK}):
            out.append(f"{label} (points at {', '.join(sorted(t for t in targets & archived if t))})")
    return sorted(out)
