"""Moving a benchmark between two databases: the demo exported from SQLite (the embedded default, in a subprocess)
and imported into this test's database (PostgreSQL in CI's full run) shows the same boards, snapshots and
scores; a changed member, a wrong key, hidden labels in clear and a second import are refused.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import json
import os
import re
import subprocess
import sys
import tarfile
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.urls import reverse
from django.utils import timezone

from campaigns.models import Phase, Team
from catalogue.models import Dataset, QrelsVersion, Split
from snapshots.archive import keys
from snapshots.archive.reader import archive_check, benchmark_import
from snapshots.archive.state import benchmark_state
from snapshots.archive.writer import ArchiveError
from snapshots.models import ArchiveImport, Snapshot
from submissions.models import Submission
from tests.conftest import run_storage_at

pytestmark = [pytest.mark.slow, pytest.mark.django_db]

ROOT = Path(__file__).resolve().parents[2]
DATASETS = ["demo", "demo-areas"]

#: Run in the exporting host (SQLite): the demo, a participant's public entry and an anonymous one, a judgment
#: in the hidden split's pool, a snapshot of every board; then its state and its hidden material, for the test.
SOURCE = r"""
import json, sys
from django.contrib.auth import get_user_model
from accounts.models import Profile
from assessment.judging import judgment_record
from assessment.models import Assignment
from catalogue.models import QrelsVersion, Split
from snapshots.archive.state import benchmark_state
from snapshots.services import snapshot_take
from submissions.models import LadderBest, Release, Result, Submission
from campaigns.models import Membership, Phase, PrivateBoard, Team
from datetime import timedelta
from django.utils import timezone

out = sys.argv[-1]
User = get_user_model()
alice = User.objects.create_user("alice", "alice-private@example.org", "Secret-Passw0rd-alice")
Profile.objects.create(user=alice, display_name="Alice Martin", affiliation="Université de Nowhere")
dev = Split.objects.get(dataset__slug="demo", name="dev")
runs = list(Submission.objects.filter(split=dev).order_by("pk"))
Submission.objects.filter(pk=runs[0].pk).update(user=alice, is_baseline=False, system_name="Alice's BM25")
Submission.objects.filter(pk=runs[1].pk).update(user=alice, is_baseline=False, visibility="anonymous")
for split in Split.objects.all():
    split.bump_cache_version()
assignment = Assignment.objects.get()
items = list(assignment.items.order_by("pk")[:2])
judgment_record(assignment=assignment, item=items[0], grade=2, seconds=4.0)
judgment_record(assignment=assignment, item=items[0], grade=3, seconds=2.0)  # supersedes the first
judgment_record(assignment=assignment, item=items[1], grade=0, seconds=3.0)
# A shared task on the hidden split, revealed: a team, its member, its final run, the ledger's line, the Ladder's best.
test = Split.objects.get(dataset__slug="demo", name="test")
now = timezone.now()
phase = Phase.objects.create(split=test, title="Demo task", opens_at=now - timedelta(days=3),
                             closes_at=now - timedelta(days=1), revealed_at=now,
                             public_qids=sorted(test.topics.values_list("qid", flat=True))[:50])
team = Team.objects.create(phase=phase, name="Alice's team", created_by=alice)
Membership.objects.create(team=team, phase=phase, user=alice)
PrivateBoard.objects.create(phase=phase, published_at=now, qrels_version=1, measure="R@100", measures=["R@100"],
                            rows=[{"team": team.name, "R@100": 0.84}])
final = Submission.objects.filter(split=test).order_by("pk").first()
Submission.objects.filter(pk=final.pk).update(user=alice, is_baseline=False, entrant_team=team, final_run=True)
result = Result.objects.get(submission=final)
Release.objects.create(split=test, result=result, submission=final, identity=f"team:{team.pk}",
                       identity_label=f"team {team.name}", day=now.date(), measures=["R@100"], bits=5.5, first=True)
LadderBest.objects.create(split=test, user=alice, qrels_version=result.qrels_version, result=result, team=team)
test.bump_cache_version()
for split in Split.objects.all():
    snapshot_take(split=split, note="before the move", made_by="curator")
state = benchmark_state(dataset_slugs=["demo", "demo-areas"])
hidden = {
    "qrels_text": [v.text() for v in QrelsVersion.objects.filter(split__hidden=True)],
    "qrels_gz": [bytes(v.qrels_gz).hex() for v in QrelsVersion.objects.filter(split__hidden=True)],
    "per_query": [bytes(r.per_query).hex() for r in Result.objects.filter(submission__split__hidden=True)
                  if r.per_query],
}
json.dump({"state": state, "hidden": hidden}, open(out, "w"), default=str)
"""


def _env(var: Path) -> dict[str, str]:
    """The embedded default: no database, broker or cache URL (SQLite and files under ``var``)."""
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "CACHE_URL",
                                                             "DJANGO_SETTINGS_MODULE", keys.KEY_ENV)}
    return {**env, "LEXBOARD_VAR_DIR": str(var), "DJANGO_SETTINGS_MODULE": "lexboard.settings"}


def _manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, f"manage.py {' '.join(args)}: {done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    return done


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    """The demo on SQLite, exported three ways: with the key, without the hidden material, and its key."""
    base = tmp_path_factory.mktemp("archive-source")
    env = _env(base / "var")
    _manage(env, "migrate", "--noinput", "-v", "0")
    _manage(env, "load_demo")
    _manage(env, "shell", "-c", SOURCE.replace("sys.argv[-1]", repr(str(base / "source.json"))))
    _manage(env, "export_benchmark", "--generate-key", str(base / "key"))
    _manage(env, "export_benchmark", "demo", "-o", str(base / "demo.tar"), "--key-file", str(base / "key"))
    _manage(env, "export_benchmark", "demo", "-o", str(base / "demo-public.tar"), "--omit-hidden")
    refused = subprocess.run([sys.executable, "manage.py", "export_benchmark", "demo", "-o", str(base / "x.tar")],
                             cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    data = json.loads((base / "source.json").read_text())
    return {"dir": base, "key": base / "key", "full": base / "demo.tar", "public": base / "demo-public.tar",
            "state": data["state"], "hidden": data["hidden"], "refused": refused}


@pytest.fixture
def storage(tmp_path):
    with run_storage_at(tmp_path / "runs") as location:
        yield location


@pytest.fixture
def elsewhere(tiny_dataset, make_entry, django_user_model):
    """This host has a board of its own already, so every imported row gets another primary key than it had."""
    owner = django_user_model.objects.create_user("someone", "someone@example.org", "a password 1234")
    for split in tiny_dataset.splits.all():
        for n in range(3):
            make_entry(split, owner, f"here {n}", {"R@10": 0.1 * n})
    test = tiny_dataset.splits.get(name="test")
    now = timezone.now()
    phase = Phase.objects.create(split=test, title="Here", opens_at=now, closes_at=now + timedelta(days=1))
    for n in range(3):
        Team.objects.create(phase=phase, name=f"team {n}", created_by=owner)
    return tiny_dataset


def _normal(value):
    return json.loads(json.dumps(value, default=str))


def _members(path: Path) -> dict[str, bytes]:
    with tarfile.open(path) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar if m.isfile()}  # type: ignore[union-attr]


def test_the_demo_moved_from_sqlite_shows_the_same_boards_snapshots_and_scores(source, storage, client, elsewhere):
    key = keys.key_load(str(source["key"]))
    report = benchmark_import(source["full"], key=key)

    here = _normal(benchmark_state(dataset_slugs=DATASETS))
    then = source["state"]
    assert here["boards"] == then["boards"], f"boards differ after SQLite → {connection.vendor}"
    assert here["snapshots"] == then["snapshots"]
    assert here["results"] == then["results"]
    assert here["qrels"] == then["qrels"]
    assert here["judgments"] == then["judgments"]
    assert here["tasks"] == then["tasks"] and here["ledger"] == then["ledger"]
    assert here["pools"] == then["pools"] and len(then["pools"]["Demo pool (depth 5, five questions)"]["items"]) == 65
    dev_key = next(k for k in then["snapshots"] if k.startswith("demo-dev-"))
    cited = next(r["submission_id"] for r in then["snapshots"][dev_key]["content"]["rows"]
                 if r["system"] == "Alice's BM25")
    assert Submission.objects.get(system_name="Alice's BM25").pk != cited  # links below go through the entry map
    assert then["tasks"]["Demo task"]["teams"] == {"Alice's team": ["alice"]} and len(then["ledger"]) == 2
    assert {b: len(v["rows"]) for b, v in here["boards"].items()} == {
        "demo-areas/test": 3, "demo-areas/train": 0, "demo/dev": 3, "demo/test": 3}
    assert len(here["snapshots"]) == 4 and all(s["intact"] for s in here["snapshots"].values())
    assert report.missing == {}

    # The run files came along, byte for byte.
    for sub in Submission.objects.filter(split__dataset__slug__in=DATASETS):
        assert sub.checksum_file() == sub.sha256
    # People: placeholders that cannot log in, with no address; the boards' names kept.
    alice = get_user_model().objects.get(username="alice")
    assert not alice.is_active and not alice.has_usable_password() and alice.email == ""
    assert alice.profile.display_name == "Alice Martin" and alice.profile.affiliation == ""

    # The snapshot's permanent address is the same; its rows link to the entries as they are numbered here.
    snapshot = Snapshot.objects.get(key__startswith="demo-dev-")
    page = client.get(reverse("snapshots:detail", args=[snapshot.key]))
    assert page.status_code == 200
    mine = Submission.objects.get(system_name="Alice's BM25")
    assert reverse("participants:detail", args=[mine.pk]) in page.content.decode()
    diff = client.get(reverse("snapshots:diff", args=[snapshot.key]))
    assert diff.status_code == 200 and diff.context["diff"].counts["same"] == 3, diff.context["diff"].counts

    # A second import of the same archive is refused, and changes nothing.
    with pytest.raises(ArchiveError, match="was imported here on"):
        benchmark_import(source["full"], key=key)
    assert ArchiveImport.objects.count() == 1 and Dataset.objects.filter(slug="demo").count() == 1


def test_hidden_labels_never_leave_in_clear(source):
    assert source["refused"].returncode != 0
    assert "demo/test, demo-areas/test: hidden split(s)" in source["refused"].stderr
    assert not (source["dir"] / "x.tar").exists()
    lines = [line.encode() for text in source["hidden"]["qrels_text"] for line in text.splitlines() if line]
    blobs = [bytes.fromhex(h) for h in source["hidden"]["qrels_gz"] + source["hidden"]["per_query"]]
    assert len(lines) == 944 and len(blobs) == 5  # 344 + 600 judgments; 2 qrels versions, 3 retrieval vectors
    # A judgment line whole (not a piece of a longer one: "6 0 1419 1" is inside a public "106 0 1419 1"), in a
    # file's lines or a JSON string's.
    wanted = set(lines)
    pieces = re.compile(rb'\n|\\n|"')
    for name in ("public", "full"):
        texts = [source[name].read_bytes()]
        for member, data in _members(source[name]).items():
            texts.append(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)
            if member.endswith(".jsonl"):  # base64 in a record would hide bytes from a plain search
                for record in map(json.loads, data.splitlines()):
                    for value in record.get("fields", record).values():
                        if isinstance(value, str) and len(value) > 40:
                            try:
                                texts.append(base64.b64decode(value, validate=True))
                            except ValueError:
                                pass
        leaked = sorted({p.strip() for t in texts for p in pieces.split(t)} & wanted)
        leaked += [b[:20] for b in blobs if any(b in t for t in texts)]
        assert not leaked, f"{name}: hidden material in clear: {leaked[:3]}"
    assert _members(source["public"])["data/assessment.PoolItem.jsonl"] == b""
    assert _members(source["full"])["data/assessment.PoolItem.jsonl"] == b""  # in the encrypted member
    manifest = json.loads(_members(source["public"])["manifest.json"])
    assert manifest["hidden"]["mode"] == "omitted" and manifest["hidden"]["key_fingerprint"] is None
    assert not any(m["path"].startswith("hidden/") for m in manifest["members"])


def test_without_the_hidden_material_the_public_boards_move_and_the_hidden_ones_wait(source, storage, elsewhere):
    report = benchmark_import(source["public"], omit_hidden=True)

    here = _normal(benchmark_state(dataset_slugs=DATASETS))
    for board in ("demo/dev", "demo-areas/train"):
        assert here["boards"][board]["rows"] == source["state"]["boards"][board]["rows"]
    assert here["snapshots"] == source["state"]["snapshots"]  # what was cited does not depend on the labels
    hidden = Split.objects.filter(dataset__slug__in=DATASETS, hidden=True)
    assert {s.accepts_submissions for s in hidden} == {False}
    assert all(bytes(v.qrels_gz) == b"" for v in QrelsVersion.objects.filter(split__in=hidden))
    assert report.missing["hidden"] == "omitted"
    assert sorted(report.missing["closed_splits"]) == sorted(s.pk for s in hidden)
    assert len(report.missing["catalogue.QrelsVersion"]) == 2
    # The hidden split's judging travels whole or not at all: its pool's items would tell what is judged already.
    assert here["pools"] == {} and here["judgments"] == {}
    assert report.missing["assessment.PoolItem rows"] == 65 and report.missing["assessment.Judgment rows"] == 3
    assert ArchiveImport.objects.get().missing == report.missing


def test_a_changed_member_is_refused_naming_it(source, tmp_path, storage):
    members = _members(source["full"])
    name = "data/submissions.Result.jsonl"
    members[name] = members[name].replace(b'"n_queries":100', b'"n_queries":99', 1)
    forged = tmp_path / "forged.tar"
    with tarfile.open(forged, "w") as tar:
        for member, data in members.items():
            info = tarfile.TarInfo(member)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))

    with pytest.raises(ArchiveError, match=f"^{name}: sha256 .* the member was changed or damaged; nothing imported"):
        benchmark_import(forged, key=keys.key_load(str(source["key"])))
    assert not Dataset.objects.filter(slug__in=DATASETS).exists()
    assert not any(storage.rglob("*.*")) if storage.exists() else True


def test_a_wrong_key_or_no_key_is_refused_before_anything_is_written(source, tmp_path, storage):
    keys.key_generate(tmp_path / "other")
    expected = json.loads(_members(source["full"])["manifest.json"])["hidden"]["key_fingerprint"]
    with pytest.raises(ArchiveError, match=f"Wrong key: .* encrypted to key {expected}, this key is"):
        archive_check(source["full"], key=keys.key_load(str(tmp_path / "other")))
    with pytest.raises(ArchiveError, match="pass --key-file PATH"):
        benchmark_import(source["full"])
    assert not Dataset.objects.filter(slug__in=DATASETS).exists()
    assert hashlib.sha256(source["key"].read_bytes().strip()).hexdigest() not in source["full"].read_text("latin-1")


def test_link_accounts_gives_the_entries_to_the_account_of_the_same_name(source, storage, django_user_model):
    alice = django_user_model.objects.create_user("alice", "alice@here.example", "another password 123")
    benchmark_import(source["full"], key=keys.key_load(str(source["key"])), link_accounts=True)
    assert Submission.objects.filter(user=alice).count() == 3  # two on dev, her team's final run on test
    assert alice.email == "alice@here.example"


def test_without_link_accounts_a_taken_username_gets_a_placeholder_under_another_name(source, storage,
                                                                                     django_user_model):
    alice = django_user_model.objects.create_user("alice", "alice@here.example", "another password 123")
    benchmark_import(source["full"], key=keys.key_load(str(source["key"])))
    assert not Submission.objects.filter(user=alice).exists()
    moved = Submission.objects.get(system_name="Alice's BM25")
    assert moved.user.username == "alice-2" and moved.display_owner() == "Alice Martin"


def test_an_archive_from_before_provenance_imports_its_old_flag_as_the_migration_reads_it(source, tmp_path, storage):
    """An older Lexboard serialized the yes/no ``used_training_data``: yes is the train split, no is unknown."""
    members = _members(source["public"])
    name = "data/submissions.Submission.jsonl"
    records = [json.loads(line) for line in members[name].splitlines()]
    for n, record in enumerate(records):
        for field in ("training_data", "training_data_note", "models_used", "could_have_seen"):
            record["fields"].pop(field)
        record["fields"]["used_training_data"] = n == 0
    members[name] = b"".join(json.dumps(r).encode() + b"\n" for r in records)
    manifest = json.loads(members["manifest.json"])
    for member in manifest["members"]:
        if member["path"] == name:
            member.update(size=len(members[name]), sha256=hashlib.sha256(members[name]).hexdigest())
    members["manifest.json"] = json.dumps(manifest).encode()
    old = tmp_path / "old.tar"
    with tarfile.open(old, "w") as tar:
        for member, data in members.items():
            info = tarfile.TarInfo(member)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))

    benchmark_import(old, omit_hidden=True)
    moved = Submission.objects.filter(split__dataset__slug__in=DATASETS).order_by("pk")
    assert [s.training_data for s in moved] == ["train_split"] + ["unknown"] * (len(records) - 1)
    assert {s.could_have_seen for s in moved} == {"unknown"}
