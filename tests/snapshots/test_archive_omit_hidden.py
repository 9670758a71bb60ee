"""An archive written with ``--omit-hidden`` holds what the site shows an anonymous visitor of a hidden split, and
nothing more (#37 item 3; docs/archive.md, "Hidden material"): read member by member, it names no seed or exact
public share of a shared task's draw (and the draw cannot be made again from it), no value of a result the Ladder
kept back, no exact count and no checksum of the hidden judgments, no warning the pages filter. It still imports.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import tarfile
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from campaigns.models import Phase
from catalogue.models import Dataset, QrelsVersion, Split, Topic
from catalogue.services import qrels_version_add
from snapshots.archive import keys
from snapshots.archive.reader import benchmark_import
from snapshots.archive.writer import benchmark_export
from submissions import disclosure
from submissions.models import Result, ResultPart, Submission
from tests.conftest import run_storage_at

pytestmark = pytest.mark.django_db

N_TOPICS = 300
SEED, SHARE = 1_234_567_891, 0.337  # the task page shows "34 %"
#: A run the Ladder kept back: its mean and grid value were released to no one (0.005 is the grid of 300 topics).
UNRELEASED_MEAN, UNRELEASED_GRID = 0.8613579, 0.86
RELEASED_MEAN, RELEASED_GRID = 0.5512345, 0.55
PRIVATE_MEAN = 0.7777321
FILTERED = [{"code": "never_predicted", "message": "2 labels of the gold are never predicted: ORG-LAW, ORG-COURT"},
            {"code": "unknown_queries", "message": "11 topics of the run have no judgments: q007, q013, …"}]
KEPT = {"code": "ties", "message": "ties in 3 topics were broken by document id"}


@pytest.fixture
def storage(tmp_path):
    with run_storage_at(tmp_path / "runs") as location:
        yield location


@pytest.fixture
def site(tiny_dataset, make_entry, storage):
    """A hidden split of 300 topics in a running shared task (seeded draw), a released and an unreleased run with
    warnings, a private part; qrels of 937 judgments, 412 relevant."""
    split = Split.objects.create(dataset=tiny_dataset, name="task", kind="test", hidden=True, ladder=False)
    qids = [f"q{i:03d}" for i in range(1, N_TOPICS + 1)]
    Topic.objects.bulk_create([Topic(split=split, qid=q, text=f"Question {q}?") for q in qids])
    qrels: dict[str, dict[str, int]] = {}
    n = 0
    for i, q in enumerate(qids):
        for j in range(3 + (i % 2)):  # 3 or 4 judgments a topic, 937 in all
            if n < 937:
                qrels.setdefault(q, {})[f"d{(i + j) % 20 + 1}"] = int(n % 9 < 4 and n < 927)
                n += 1
    qrels_version_add(split=split, qrels=qrels)
    split.refresh_from_db()
    version = split.current_qrels
    assert (version.n_judgments, version.n_relevant) == (937, 412)
    now = timezone.now()
    phase = Phase.objects.create(split=split, title="Task 1", opens_at=now - timedelta(days=2),
                                 closes_at=now + timedelta(days=5), public_share=SHARE, seed=SEED)
    phase.fix_partition(qids)
    phase.save()
    owner = get_user_model().objects.create_user("owner", "owner@example.org", "a password 1234")
    shown, kept_back = (make_entry(split, owner, name, {"R@10": mean, "MAP@10": mean / 2})
                        for name, mean in (("BM25", RELEASED_MEAN), ("Probe", UNRELEASED_MEAN)))
    for sub, released, grid, message in ((shown, True, RELEASED_GRID, "Released: … over your best (50), now 55"),
                                         (kept_back, False, UNRELEASED_GRID,
                                          "Not a significant improvement over your best (R@10 55 %)")):
        Submission.objects.filter(pk=sub.pk).update(warnings=[*FILTERED, KEPT])
        Result.objects.filter(submission=sub).update(
            released=released, released_score=grid, released_step=0.005, ladder_message=message, ladder_p=0.0123457,
            n_queries=97, warnings=[*FILTERED, KEPT])
        ResultPart.objects.create(submission=sub, qrels_version=version, part="private", scores={"R@10": PRIVATE_MEAN},
                                  primary_score=PRIVATE_MEAN, n_queries=203)
    return {"split": split, "phase": phase, "version": version, "qids": qids, "released": shown,
            "unreleased": kept_back}


def _members(path: Path) -> dict[str, bytes]:
    """Every member, gzip ones inflated too (a blob is gzip corpus ids or documents)."""
    out = {}
    with tarfile.open(path) as tar:
        for m in tar:
            data = tar.extractfile(m).read()  # type: ignore[union-attr]
            out[m.name] = gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data
    return out


def _records(members: dict[str, bytes], label: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in members[f"data/{label}.jsonl"].splitlines()]


def _numbers(value: Any) -> list[float]:
    """Every number in a record, however nested."""
    if isinstance(value, dict):
        return [n for v in value.values() for n in _numbers(v)]
    if isinstance(value, list):
        return [n for v in value for n in _numbers(v)]
    return [value] if isinstance(value, int | float) and not isinstance(value, bool) else []


def _draw_attack(qids: list[str], phase_record: dict[str, Any], manifest: dict[str, Any]) -> list[str] | None:
    """Rebuild the public topics from what the archive says of the phase: every number of its record (and of the
    manifest) as the seed, every number in (0, 1) of its record (and every whole percentage) as the share."""
    seeds = {int(n) for n in _numbers(phase_record) + _numbers(manifest) if float(n).is_integer() and n >= 0}
    shares = {n for n in _numbers(phase_record) if 0 < n < 1} | {p / 100 for p in range(5, 96)}
    for seed in seeds:
        for share in shares:
            drawn = Phase.draw_public(qids, share=share, seed=seed)
            if drawn == phase_record["fields"].get("public_qids"):
                return drawn
    return None


def test_an_omit_hidden_archive_holds_only_what_an_anonymous_visitor_reads(site, tmp_path):
    path = tmp_path / "tiny.tar"
    benchmark_export(benchmark_slug="tiny", out=path, omit_hidden=True)
    members = _members(path)
    text = b"\n".join(members.values())
    phase, version, split = site["phase"], site["version"], site["split"]

    # The attack works on the site's own values: the draw is made again from (seed, share).
    assert Phase.draw_public(site["qids"], share=SHARE, seed=SEED) == phase.public_qids
    assert len(phase.public_qids) == 101

    # A shared task's draw: no seed, no exact share, no partition; and it cannot be made again from the archive.
    (record,) = [r for r in _records(members, "campaigns.Phase") if r["fields"]["title"] == "Task 1"]
    manifest = json.loads(members["manifest.json"])
    true_partition = {**record, "fields": {**record["fields"], "public_qids": phase.public_qids}}
    rebuilt = _draw_attack(site["qids"], true_partition, manifest)
    assert rebuilt is None, f"the draw made again from the archive: {len(rebuilt)} of {len(phase.public_qids)} topics"
    assert {"seed", "public_qids"}.isdisjoint(record["fields"]) and record["fields"]["public_share"] == 0.34
    assert str(SEED).encode() not in text and str(SHARE).encode() not in text
    assert not any(q.encode() in members["data/campaigns.Phase.jsonl"] for q in phase.public_qids)

    # Results: the released one as the board shows it (the primary measure on the grid), the other nothing.
    results = {r["fields"]["submission"]: r["fields"] for r in _records(members, "submissions.Result")}
    released, unreleased = results[site["released"].pk], results[site["unreleased"].pk]
    assert released["scores"] == {"R@10": RELEASED_GRID} == disclosure.released_scores(
        Result.objects.get(submission=site["released"]), split=split)
    assert (released["primary_score"], released["released_score"]) == (RELEASED_GRID, RELEASED_GRID)
    assert unreleased["scores"] == {} and unreleased["primary_score"] is None
    assert unreleased["released_score"] is None and unreleased["released_step"] is None
    assert unreleased["ladder_message"] == disclosure.NOT_RELEASED
    assert released["ladder_message"] == disclosure.RELEASED
    assert {released["n_queries"], unreleased["n_queries"]} == {0}  # a public part's evaluated count, mid-task
    hidden_results = b"".join(json.dumps(results[s.pk]).encode() for s in (site["released"], site["unreleased"]))
    for value in (UNRELEASED_MEAN, UNRELEASED_MEAN / 2, RELEASED_MEAN, RELEASED_MEAN / 2, PRIVATE_MEAN, 0.0123457):
        assert repr(value).encode() not in text, value
    assert b"0.86" not in hidden_results and b"0.0123457" not in text
    assert all({"n_queries", "scores", "primary_score"}.isdisjoint(r["fields"])
               for r in _records(members, "submissions.ResultPart"))

    # The hidden judgments: no exact count, no checksum; the count as the qrels history writes it.
    (qrels,) = [r["fields"] for r in _records(members, "catalogue.QrelsVersion") if r["fields"]["split"] == split.pk]
    assert "n_relevant" not in qrels and qrels["n_judgments"] == 940
    assert disclosure.count_shown(qrels["n_judgments"], split=split) == disclosure.count_shown(937, split=split)
    assert version.sha256.encode() not in text and qrels["sha256"] == "withheld: version 1"
    for exact in (b'"n_judgments":937', b'"n_relevant":412', b":203", b":97,"):
        assert exact not in members["data/catalogue.QrelsVersion.jsonl"] + members[
            "data/submissions.Result.jsonl"] + members["data/submissions.ResultPart.jsonl"], exact

    # Warnings the pages filter on a hidden split are not there; the file's own are.
    for warning in FILTERED:
        assert warning["message"].encode() not in text
    assert KEPT["message"].encode() in members["data/submissions.Submission.jsonl"]

    # The archive imports; the importing host shows the released value and lacks the rest.
    Dataset.objects.filter(slug="tiny").update(slug="tiny-here")
    report = benchmark_import(path, omit_hidden=True)
    moved = Result.objects.get(submission__system_name="BM25", submission__split__dataset__slug="tiny",
                               submission__split__name="task")
    assert (moved.released, moved.released_score, moved.scores) == (True, RELEASED_GRID, {"R@10": RELEASED_GRID})
    held = Result.objects.get(submission__system_name="Probe", submission__split__dataset__slug="tiny")
    assert (held.released, held.released_score, held.scores, bytes(held.per_query)) == (False, None, {}, b"")
    task = Phase.objects.get(split__dataset__slug="tiny")
    assert task.public_qids == [] and task.seed != SEED and task.public_share == 0.34
    assert QrelsVersion.objects.get(split=task.split).sha256 == "withheld: version 1"
    assert report.missing["hidden"] == "omitted" and task.split_id in report.missing["closed_splits"]


def test_an_encrypted_archive_keeps_the_same_clear_members_and_gives_the_values_back_with_the_key(site, tmp_path):
    keys.key_generate(tmp_path / "key")
    key = keys.key_load(str(tmp_path / "key"))
    path = tmp_path / "tiny.tar"
    benchmark_export(benchmark_slug="tiny", out=path, key=key)
    members = _members(path)
    clear = b"\n".join(data for name, data in members.items() if not name.startswith("hidden/"))
    assert str(SEED).encode() not in clear and site["version"].sha256.encode() not in clear
    assert FILTERED[0]["message"].encode() not in clear and repr(UNRELEASED_MEAN).encode() not in clear

    Dataset.objects.filter(slug="tiny").update(slug="tiny-here")
    benchmark_import(path, key=key)
    task = Phase.objects.get(split__dataset__slug="tiny")
    assert (task.seed, task.public_share, task.public_qids) == (SEED, SHARE, site["phase"].public_qids)
    held = Result.objects.get(submission__system_name="Probe", submission__split__dataset__slug="tiny")
    assert (held.released_score, held.primary_score, held.n_queries) == (UNRELEASED_GRID, UNRELEASED_MEAN, 97)
    assert held.warnings == [*FILTERED, KEPT] and held.ladder_message.startswith("Not a significant")
    version = QrelsVersion.objects.get(split=task.split)
    assert (version.sha256, version.n_judgments, version.n_relevant) == (site["version"].sha256, 937, 412)
    assert hashlib.sha256(bytes(version.qrels_gz)).hexdigest() == hashlib.sha256(
        bytes(site["version"].qrels_gz)).hexdigest()
    assert re.fullmatch(r"[0-9a-f]{64}", version.sha256)
