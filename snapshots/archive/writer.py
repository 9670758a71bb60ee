"""Writing an archive: the benchmark's rows as Django serializes them, its files and blobs, a manifest.

Every record is ``serializers.serialize("python", …)`` of the whole row, so a field added to a model later
travels without an edit here. Large binary values (corpus ids, qrels, per-query vectors) and stored files (run
files) become members of their own, named by their sha256 (the same bytes are stored once). Hidden material
(:data:`.spec.ModelSpec.hidden_fields` of rows on a hidden split, and the whole rows of ``hidden_rows`` models
there) never goes into a member in clear: it is encrypted to the operator's key into
``hidden/hidden.json.fernet``, or left out (``omit_hidden``).
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import decimal
import hashlib
import io
import json
import shutil
import tarfile
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core import serializers
from django.db import connection, models, transaction
from django.db.migrations.loader import MigrationLoader
from django.utils import timezone

from catalogue.models import Benchmark, Dataset, Split
from lexboard.release import code_digest

from ..models import Snapshot, SnapshotEntryMap
from ..services import core_version
from . import keys, released
from .spec import ARCHIVED, BENCHMARK, EXCLUDED, USER_LABEL, related_label

FORMAT = "lexboard-benchmark-archive"
#: 2 since 6 December 2026: records under today's app labels (catalogue.*, campaigns.*); the reader still reads 1
#: (``reader.FORMAT_1_LABELS``).
FORMAT_VERSION = 2
MANIFEST = "manifest.json"
HIDDEN_MEMBER = "hidden/hidden.json.fernet"
ACCOUNTS_MEMBER = "data/accounts.jsonl"
ENTRIES_MEMBER = "data/snapshot-entries.jsonl"


class ArchiveError(Exception):
    """An export or import refused, with what to do about it."""


def to_json(value: Any) -> Any:
    """JSON for what the python serializer leaves as objects (dates keep their microseconds, unlike Django's)."""
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, decimal.Decimal | uuid.UUID):
        return str(value)
    raise TypeError(f"cannot write {type(value).__name__} to an archive")


def dumps(value: Any) -> bytes:
    return json.dumps(value, default=to_json, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()


@dataclasses.dataclass
class ExportReport:
    path: Path
    size: int
    manifest_sha256: str
    records: dict[str, int]
    hidden_mode: str
    hidden_records: int
    files: int
    missing_files: list[str]


class _Members:
    """Members written to a scratch folder first (sizes and sha256 known before the tar is written)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.entries: dict[str, dict[str, Any]] = {}

    def add(self, path: str, data: bytes) -> str:
        if path not in self.entries:
            target = self.root / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            self.entries[path] = {"path": path, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
        return path

    def add_blob(self, data: bytes, folder: str = "blobs") -> str:
        sha = hashlib.sha256(data).hexdigest()
        self.add(f"{folder}/{sha}", data)
        return sha


def _datasets(benchmark_slug: str, dataset_slugs: list[str] | None) -> tuple[Benchmark, list[Dataset]]:
    benchmark = Benchmark.objects.filter(slug=benchmark_slug).first()
    if benchmark is None:
        known = ", ".join(Benchmark.objects.values_list("slug", flat=True)) or "none"
        raise ArchiveError(f"There is no benchmark {benchmark_slug!r} (benchmarks here: {known}).")
    datasets = list(benchmark.datasets.order_by("pk"))
    if dataset_slugs:
        wanted = set(dataset_slugs)
        unknown = wanted - {d.slug for d in datasets}
        if unknown:
            raise ArchiveError(f"{', '.join(sorted(unknown))}: not a dataset of {benchmark_slug} "
                               f"({', '.join(d.slug for d in datasets)}).")
        datasets = [d for d in datasets if d.slug in wanted]
    if not datasets:
        raise ArchiveError(f"The benchmark {benchmark_slug} has no dataset to export.")
    return benchmark, datasets


def _schema() -> dict[str, str]:
    """The newest migration of each archived app, as this host has it (an importing host needs them all)."""
    labels = {BENCHMARK.split(".")[0], *(s.label.split(".")[0] for s in ARCHIVED), "auth"}
    leaves = MigrationLoader(None, ignore_no_migrations=True).graph.leaf_nodes()
    return {app: name for app, name in sorted(leaves) if app in labels}


def _file_fields(model: type[models.Model]) -> list[models.FileField]:
    return [f for f in model._meta.concrete_fields if isinstance(f, models.FileField)]


def _binary_fields(model: type[models.Model]) -> list[str]:
    return [f.name for f in model._meta.concrete_fields if isinstance(f, models.BinaryField)]


def _user_fields(model: type[models.Model]) -> list[str]:
    return [f.name for f in model._meta.concrete_fields if related_label(f) == USER_LABEL]


def benchmark_export(*, benchmark_slug: str, out: Path, dataset_slugs: list[str] | None = None,
                     key: bytes | None = None, omit_hidden: bool = False) -> ExportReport:
    """Write ``out`` (a ``.tar``, or ``.tar.gz``); refuses hidden splits' labels without a key or ``omit_hidden``.

    One transaction, read-only and REPEATABLE READ on PostgreSQL, so an export taken while the site runs is one
    consistent state (a score landing meanwhile is in all of its rows or in none).
    """
    outer = connection.in_atomic_block
    with transaction.atomic():
        if connection.vendor == "postgresql" and not outer:
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        return _export(benchmark_slug=benchmark_slug, out=out, dataset_slugs=dataset_slugs, key=key,
                       omit_hidden=omit_hidden)


def _export(*, benchmark_slug: str, out: Path, dataset_slugs: list[str] | None, key: bytes | None,
            omit_hidden: bool) -> ExportReport:
    benchmark, datasets = _datasets(benchmark_slug, dataset_slugs)
    ids = [d.pk for d in datasets]
    hidden_splits = list(Split.objects.filter(dataset_id__in=ids, hidden=True).select_related("dataset", "phase"))
    if key is not None and omit_hidden:
        raise ArchiveError("Give either a key (to encrypt the hidden material) or --omit-hidden, not both.")
    if hidden_splits and key is None and not omit_hidden:
        names = ", ".join(str(s) for s in hidden_splits)
        raise ArchiveError(
            f"{names}: hidden split(s); their judgments, and the scores and judgments derived from them, never "
            "leave in clear. Pass --key-file PATH (make a key with `manage.py export_benchmark --generate-key "
            "PATH`, keep it apart from the archive) to encrypt them, or --omit-hidden to leave them out.")
    mode = "none" if not hidden_splits else ("omitted" if omit_hidden else "encrypted")
    if not out.parent.is_dir():
        raise ArchiveError(f"{out.parent} is not a folder: create it, or write the archive elsewhere.")
    scratch = Path(tempfile.mkdtemp(prefix=".lexboard-export-", dir=out.parent))
    try:
        members = _Members(scratch)
        users: set[int] = set()
        hidden: dict[str, dict[str, dict[str, Any]]] = {}  # label → pk → hidden fields
        hidden_rows: dict[str, list[dict[str, Any]]] = {}  # label → whole records
        n_hidden_rows: dict[str, int] = {}
        counts: dict[str, int] = {}
        models_out = []
        missing: list[str] = []
        n_files = 0

        bench = serializers.serialize("python", [benchmark])
        members.add(f"data/{BENCHMARK}.jsonl", dumps(bench[0]) + b"\n")
        models_out.append({"label": BENCHMARK, "member": f"data/{BENCHMARK}.jsonl", "records": 1})

        for spec in ARCHIVED:
            model = spec.model
            lookup = f"{spec.scope}__in" if spec.scope else "pk__in"
            rows = model._base_manager.filter(**{lookup: ids}).order_by("pk")
            # pk → its hidden split, for the rows whose hidden fields are hidden material.
            hidden_pks = (dict(rows.filter(**{f"{spec.split}__hidden": True}).values_list("pk", spec.split))
                          if spec.split and (spec.hidden_fields or spec.hidden_rows) else {})
            splits_of = {s.pk: s for s in hidden_splits}
            binaries, files, user_fields = _binary_fields(model), _file_fields(model), _user_fields(model)
            lines = []
            for obj, record in _serialized(rows):
                fields = record["fields"]
                for name in spec.dropped:
                    fields.pop(name, None)
                if not (obj.pk in hidden_pks and spec.hidden_rows and mode != "encrypted"):
                    users.update(int(fields[name]) for name in user_fields if fields.get(name) is not None)
                if obj.pk in hidden_pks and spec.hidden_rows:
                    # Binary values stay inline (base64) inside the encrypted member, never a blob in clear.
                    n_hidden_rows[spec.label] = n_hidden_rows.get(spec.label, 0) + 1
                    if mode == "encrypted":
                        hidden_rows.setdefault(spec.label, []).append(record)
                    continue
                if obj.pk in hidden_pks:
                    moved = {name: fields.pop(name) for name in spec.hidden_fields}
                    record["hidden"] = sorted(moved)
                    if mode == "encrypted":
                        hidden.setdefault(spec.label, {})[str(obj.pk)] = moved
                    # In clear: what the site shows an anonymous visitor of these fields (the owner's answer).
                    fields.update(released.shown(spec.label, obj, splits_of[hidden_pks[obj.pk]]))
                for name in binaries:
                    value = fields.get(name)
                    if value:
                        fields[name] = {"blob": members.add_blob(base64.b64decode(value))}
                for f in files:
                    ref, lost = _file_member(members, obj, f)
                    fields[f.name] = ref
                    n_files += ref is not None
                    if lost:
                        missing.append(lost)
                lines.append(dumps(record))
            members.add(spec.member, b"".join(line + b"\n" for line in lines))
            counts[spec.label] = len(lines)
            models_out.append({"label": spec.label, "member": spec.member, "records": len(lines)})

        members.add(ACCOUNTS_MEMBER, _accounts(users))
        members.add(ENTRIES_MEMBER, _snapshot_entries(ids))
        n_hidden = sum(len(v) for v in hidden.values()) + sum(n_hidden_rows.values())
        if mode == "encrypted":
            assert key is not None
            members.add(HIDDEN_MEMBER, keys.encrypt(key, dumps({"fields": hidden, "rows": hidden_rows})))

        manifest = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "created_at": timezone.now().isoformat(),
            "lexboard_version": f"lexboard@{code_digest(Path(settings.BASE_DIR))}",
            "core_version": core_version(),
            "schema": _schema(),
            "benchmark": {"slug": benchmark.slug, "name": benchmark.name},
            "datasets": [d.slug for d in datasets],
            "splits": [{"dataset": s.dataset.slug, "name": s.name, "hidden": s.hidden}
                       for s in Split.objects.filter(dataset_id__in=ids).select_related("dataset").order_by("pk")],
            "hidden": {
                "mode": mode,
                "key_fingerprint": keys.fingerprint(key) if mode == "encrypted" and key else None,
                "member": HIDDEN_MEMBER if mode == "encrypted" else None,
                "splits": [f"{s.dataset.slug}/{s.name}" for s in hidden_splits],
                "fields": {s.label: list(s.hidden_fields) for s in ARCHIVED if s.hidden_fields},
                "row_models": [s.label for s in ARCHIVED if s.hidden_rows],
                "rows": n_hidden_rows,
                "records": n_hidden,
            },
            "models": models_out,
            "dropped": {s.label: s.dropped for s in ARCHIVED if s.dropped},
            "excluded": EXCLUDED,
            "missing_files": missing,
            "members": [members.entries[p] for p in sorted(members.entries)],
        }
        manifest_bytes = json.dumps(manifest, indent=2, ensure_ascii=False).encode() + b"\n"
        _write_tar(out, manifest_bytes, scratch, sorted(members.entries))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return ExportReport(path=out, size=out.stat().st_size, manifest_sha256=hashlib.sha256(manifest_bytes).hexdigest(),
                        records=counts, hidden_mode=mode, hidden_records=n_hidden, files=n_files,
                        missing_files=missing)


def _serialized(rows: models.QuerySet, chunk: int = 200) -> Iterator[tuple[models.Model, dict[str, Any]]]:
    """Each row with its record (Django's python serialization), a chunk at a time (one query per chunk)."""
    batch: list[models.Model] = []
    for obj in rows.iterator(chunk_size=chunk):
        batch.append(obj)
        if len(batch) == chunk:
            yield from zip(batch, serializers.serialize("python", batch), strict=True)
            batch = []
    if batch:
        yield from zip(batch, serializers.serialize("python", batch), strict=True)


def _file_member(members: _Members, obj: models.Model, f: models.FileField) -> tuple[dict[str, str] | None, str]:
    """The file's member reference ({"file": sha256, "name": basename}), or None when there is no file; and a note
    when the row names a file the storage no longer has."""
    stored = getattr(obj, f.name)
    if not stored or not stored.name:
        return None, ""
    try:
        with stored.storage.open(stored.name, "rb") as fh:
            data = fh.read()
    except (FileNotFoundError, OSError):
        return None, f"{obj._meta.label} {obj.pk}: {f.name} {stored.name} is not in the storage"
    sha = members.add_blob(data, folder="files")
    return {"file": sha, "name": Path(stored.name).name}, ""


def _accounts(user_ids: set[int]) -> bytes:
    """Only what the boards show of a person: the username and the public display name (no e-mail, no password)."""
    User = get_user_model()
    lines = []
    for user in User.objects.filter(pk__in=user_ids).select_related("profile").order_by("pk"):
        profile = getattr(user, "profile", None)
        lines.append(dumps({"pk": user.pk, "username": user.get_username(),
                            "display_name": (profile.display_name if profile else "") or ""}))
    return b"".join(line + b"\n" for line in lines)


def _snapshot_entries(dataset_ids: list[int]) -> bytes:
    """For each snapshot, the submission ids its rows cite → the submissions here (so links survive a move)."""
    lines = []
    maps = dict(SnapshotEntryMap.objects.filter(snapshot__split__dataset_id__in=dataset_ids)
                .values_list("snapshot_id", "ids"))
    for snapshot in Snapshot.objects.filter(split__dataset_id__in=dataset_ids).order_by("pk").only("pk", "rows"):
        ids = maps.get(snapshot.pk) or {str(r["submission_id"]): r["submission_id"] for r in snapshot.rows
                                        if r.get("submission_id")}
        lines.append(dumps({"snapshot": snapshot.pk, "ids": ids}))
    return b"".join(line + b"\n" for line in lines)


def _write_tar(out: Path, manifest: bytes, scratch: Path, paths: list[str]) -> None:
    now = int(timezone.now().timestamp())
    partial = out.with_name(out.name + ".partial")
    gz = out.name.endswith((".tar.gz", ".tgz"))
    opened = (tarfile.open(partial, "w:gz", format=tarfile.PAX_FORMAT) if gz
              else tarfile.open(partial, "w", format=tarfile.PAX_FORMAT))
    with opened as tar:
        info = tarfile.TarInfo(MANIFEST)
        info.size, info.mtime, info.mode = len(manifest), now, 0o644
        tar.addfile(info, io.BytesIO(manifest))
        for path in paths:
            info = tarfile.TarInfo(path)
            info.size, info.mtime, info.mode = (scratch / path).stat().st_size, now, 0o644
            with (scratch / path).open("rb") as fh:
                tar.addfile(info, fh)
    partial.replace(out)
