"""Reading an archive: every check first (checksums, format, schema, key, conflicts), then one transaction.

Nothing is written before every member's sha256 matches the manifest and the key (if any) opens the hidden
material; then every row is inserted with a new primary key, foreign keys are mapped to the new ones, links to
rows not inserted yet are set at the end, and either all of it is in or none of it is (run files written to
the storage are removed again when the transaction fails).
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import hashlib
import json
import re
import tarfile
from pathlib import Path
from typing import IO, Any

from django.apps import apps
from django.contrib.auth import get_user_model
from django.core import serializers
from django.core.exceptions import FieldDoesNotExist
from django.core.files.base import ContentFile
from django.core.serializers.base import DeserializationError
from django.db import models, transaction
from django.db.migrations.loader import MigrationLoader

from accounts.models import Profile
from catalogue.models import Dataset, Split
from catalogue.page_generation import page_generation_bump
from submissions.provenance import upgrade_legacy_fields

from ..models import ArchiveImport, Snapshot, SnapshotEntryMap
from . import keys
from .spec import ARCHIVED, BENCHMARK, USER_LABEL, archived_labels, related_label
from .writer import ACCOUNTS_MEMBER, ENTRIES_MEMBER, FORMAT, FORMAT_VERSION, MANIFEST, ArchiveError

#: What a member may be called: nothing absolute, nothing climbing out, nothing unexpected.
_MEMBER_NAME = re.compile(r"^(manifest\.json|data/[A-Za-z0-9_.\-]+\.jsonl|(blobs|files)/[0-9a-f]{64}"
                          r"|hidden/hidden\.json\.fernet)$")


@dataclasses.dataclass
class CheckedArchive:
    path: Path
    sha256: str
    manifest: dict[str, Any]
    # The decrypted hidden material ({"fields": {label: {pk: fields}}, "rows": {label: [records]}}); None when
    # left out.
    secret: dict[str, Any] | None


@dataclasses.dataclass
class ImportReport:
    record: ArchiveImport
    records: dict[str, int]
    accounts_created: int
    accounts_linked: int
    missing: dict[str, Any]


def archive_check(path: Path, *, key: bytes | None = None, omit_hidden: bool = False) -> CheckedArchive:
    """Every member against the manifest, the format, the key: raises :class:`ArchiveError` naming what is wrong."""
    digest = hashlib.sha256()
    try:
        with path.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
    except OSError as exc:
        raise ArchiveError(f"Cannot read {path}: {exc.strerror}.") from exc
    try:
        tar = tarfile.open(path, "r:*")
    except (tarfile.TarError, OSError) as exc:
        raise ArchiveError(f"{path} is not a tar archive ({exc}).") from exc
    with tar:
        found: dict[str, tuple[int, str]] = {}
        manifest_bytes = None
        for info in tar:
            if not info.isfile() or not _MEMBER_NAME.match(info.name):
                raise ArchiveError(f"{info.name}: not a member a Lexboard archive has; refused, nothing imported.")
            if info.name in found:
                raise ArchiveError(f"{info.name}: twice in the archive; refused, nothing imported.")
            member = tar.extractfile(info)
            assert member is not None
            member_digest, size = hashlib.sha256(), 0
            data = bytearray() if info.name == MANIFEST else None
            for chunk in iter(functools.partial(member.read, 1 << 20), b""):
                member_digest.update(chunk)
                size += len(chunk)
                if data is not None:
                    data += chunk
            found[info.name] = (size, member_digest.hexdigest())
            if data is not None:
                manifest_bytes = bytes(data)
        if manifest_bytes is None:
            raise ArchiveError(f"{path} has no manifest.json: not a Lexboard archive.")
        try:
            manifest = json.loads(manifest_bytes)
        except ValueError as exc:
            raise ArchiveError(f"manifest.json is not JSON ({exc}): the archive is damaged.") from exc
        if manifest.get("format") != FORMAT:
            raise ArchiveError(f"manifest.json says format {manifest.get('format')!r}: not a Lexboard benchmark archive.")
        if int(manifest.get("format_version", 0)) > FORMAT_VERSION:
            raise ArchiveError(f"The archive's format version is {manifest['format_version']}; this Lexboard reads "
                               f"up to {FORMAT_VERSION}: upgrade it first.")
        listed = {m["path"]: (m["size"], m["sha256"]) for m in manifest.get("members", [])}
        for name, (size, sha) in sorted(listed.items()):
            if name not in found:
                raise ArchiveError(f"{name}: listed in the manifest, missing from the archive; nothing imported.")
            if found[name] != (size, sha):
                raise ArchiveError(f"{name}: sha256 {found[name][1]} ({found[name][0]} bytes), the manifest says "
                                   f"{sha} ({size} bytes): the member was changed or damaged; nothing imported.")
        extra = sorted(set(found) - set(listed) - {MANIFEST})
        if extra:
            raise ArchiveError(f"{extra[0]}: in the archive but not in its manifest; refused, nothing imported.")
        _check_schema(manifest)
        hidden = _open_hidden(tar, manifest, key=key, omit_hidden=omit_hidden)
    return CheckedArchive(path=path, sha256=digest.hexdigest(), manifest=manifest, secret=hidden)


def _check_schema(manifest: dict[str, Any]) -> None:
    nodes = set(MigrationLoader(None, ignore_no_migrations=True).graph.nodes)
    for app, name in sorted(manifest.get("schema", {}).items()):
        if (app, name) not in nodes:
            raise ArchiveError(f"The archive was written by a Lexboard with migration {app}.{name}, which this one "
                               f"lacks ({manifest.get('lexboard_version')}): upgrade this host, migrate, then import.")


def _open_hidden(tar: tarfile.TarFile, manifest: dict[str, Any], *, key: bytes | None,
                 omit_hidden: bool) -> dict[str, Any] | None:
    hidden = manifest.get("hidden", {})
    if hidden.get("mode") != "encrypted" or (omit_hidden and key is None):
        return None
    member, expected = hidden["member"], hidden["key_fingerprint"]
    if key is None:
        raise ArchiveError(
            f"The hidden splits' material ({', '.join(hidden.get('splits', []))}) is encrypted to key {expected}: "
            "pass --key-file PATH (or LEXBOARD_ARCHIVE_KEY), or --omit-hidden to import without it (those boards "
            "stay empty until their judgments are published again).")
    if keys.fingerprint(key) != expected:
        raise ArchiveError(f"Wrong key: the archive's hidden material is encrypted to key {expected}, this key is "
                           f"{keys.fingerprint(key)}; nothing imported.")
    fh = tar.extractfile(member)
    assert fh is not None
    try:
        payload: dict[str, Any] = json.loads(keys.decrypt(key, fh.read(), member=member))
    except keys.ArchiveKeyError as exc:
        raise ArchiveError(str(exc)) from exc
    return payload


def _conflicts(manifest: dict[str, Any], sha: str) -> None:
    before = ArchiveImport.objects.filter(archive_sha256=sha).first()
    if before is not None:
        when = f"{before.imported_at:%Y-%m-%d %H:%M}"
        raise ArchiveError(f"This archive (sha256 {sha[:12]}…) was imported here on {when} UTC; its datasets are "
                           "here already. Nothing imported.")
    taken = sorted(Dataset.objects.filter(slug__in=manifest["datasets"]).values_list("slug", flat=True))
    if taken:
        raise ArchiveError(f"Dataset(s) {', '.join(taken)} exist here already: an archive never overwrites a board. "
                           "Import into another instance, or delete those datasets first. Nothing imported.")


def _read_jsonl(tar: tarfile.TarFile, member: str) -> list[dict[str, Any]]:
    fh = tar.extractfile(member)
    assert fh is not None
    return [json.loads(line) for line in fh.read().splitlines() if line.strip()]


def _member_bytes(tar: tarfile.TarFile, member: str) -> bytes:
    fh: IO[bytes] | None = tar.extractfile(member)
    assert fh is not None
    return fh.read()


class _Importer:
    """The state of one import: the id maps (old primary key → new), links to set at the end, files written."""

    def __init__(self, tar: tarfile.TarFile, checked: CheckedArchive, *, link_accounts: bool) -> None:
        self.tar = tar
        self.checked = checked
        self.link_accounts = link_accounts
        self.maps: dict[str, dict[int, int]] = {USER_LABEL: {}}
        self.deferred: list[tuple[type[models.Model], int, str, str, Any]] = []
        self.m2m: list[tuple[models.Model, dict[str, list[Any]]]] = []
        self.written: list[tuple[Any, str]] = []
        self.missing: dict[str, Any] = {}
        self.accounts_created = self.accounts_linked = 0
        self.archived = archived_labels()

    # --- accounts -----------------------------------------------------------------------------------

    def accounts(self) -> None:
        """Placeholder accounts (inactive, no e-mail, no usable password), or this host's own with --link-accounts."""
        User = get_user_model()
        for row in _read_jsonl(self.tar, ACCOUNTS_MEMBER):
            username, shown = row["username"], row["display_name"]
            user = User.objects.filter(username=username).first() if self.link_accounts else None
            if user is not None:
                self.accounts_linked += 1
            else:
                name, n = username, 1
                while User.objects.filter(username=name).exists():
                    n += 1
                    name = f"{username[:140]}-{n}"
                user = User(username=name, email="", is_active=False)
                user.set_unusable_password()
                user.save()
                # The name the boards showed, whatever this host had to call the account.
                if shown or name != username:
                    Profile.objects.update_or_create(user=user, defaults={"display_name": shown or username})
                self.accounts_created += 1
            self.maps[USER_LABEL][row["pk"]] = user.pk

    # --- rows ---------------------------------------------------------------------------------------

    def rows(self, label: str, member: str, *, identities: tuple[str, ...] = ()) -> int:
        model = apps.get_model(label)
        self.maps.setdefault(label, {})
        secret = self.checked.secret or {}
        payload = secret.get("fields", {}).get(label, {})
        # Whole rows that were hidden material join the others in primary-key order (the order links rely on).
        records = sorted(_read_jsonl(self.tar, member) + secret.get("rows", {}).get(label, []), key=lambda r: r["pk"])
        for record in records:
            old_pk = record["pk"]
            fields = record["fields"]
            if label == "submissions.Submission":  # written before entries stated provenance
                upgrade_legacy_fields(fields)
            lacks = False
            if record.pop("hidden", None):
                if str(old_pk) in payload:
                    fields.update(payload[str(old_pk)])
                else:
                    lacks = True
            self._blobs(model, fields)
            files = {f: fields.pop(f.name, None) for f in model._meta.concrete_fields if isinstance(f, models.FileField)}
            if label == BENCHMARK and (existing := model._base_manager.filter(slug=fields["slug"]).first()):
                self.maps[label][old_pk] = existing.pk
                continue
            obj, m2m = self._deserialize(label, record)
            self._files(obj, files)
            self._remap(obj, label, old_pk)
            for name in identities:
                setattr(obj, name, self._identity(getattr(obj, name)))
            obj.pk = None
            obj._state.adding = True
            models.Model.save_base(obj, raw=True, force_insert=True)
            self.maps[label][old_pk] = obj.pk
            if lacks:
                self.missing.setdefault(label, []).append(obj.pk)
            if m2m:
                self.m2m.append((obj, m2m))
        return len(records)

    def _deserialize(self, label: str, record: dict[str, Any]) -> tuple[models.Model, dict[str, list[Any]]]:
        try:
            found = next(iter(serializers.deserialize("python", [record])))
        except (DeserializationError, FieldDoesNotExist) as exc:
            raise ArchiveError(f"{label} record {record.get('pk')}: {exc}. The archive comes from a newer Lexboard "
                               f"({self.checked.manifest.get('lexboard_version')}): upgrade this host.") from exc
        return found.object, {name: list(ids) for name, ids in (found.m2m_data or {}).items()}

    def _blobs(self, model: type[models.Model], fields: dict[str, Any]) -> None:
        for f in model._meta.concrete_fields:
            value = fields.get(f.name)
            if isinstance(f, models.BinaryField) and isinstance(value, dict):
                fields[f.name] = base64.b64encode(_member_bytes(self.tar, f"blobs/{value['blob']}")).decode()

    def _files(self, obj: models.Model, refs: dict[models.FileField, dict[str, str] | None]) -> None:
        """Each file into this host's storage under a name its field makes (removed again if the import fails)."""
        for f, ref in refs.items():
            if not ref:
                setattr(obj, f.attname, "")
                continue
            data = _member_bytes(self.tar, f"files/{ref['file']}")
            name = f.storage.save(f.generate_filename(obj, ref["name"]), ContentFile(data))
            self.written.append((f.storage, name))
            setattr(obj, f.attname, name)

    def _remap(self, obj: models.Model, label: str, old_pk: int) -> None:
        for f in obj._meta.concrete_fields:
            target = related_label(f)
            if target is None:
                continue
            old = getattr(obj, f.attname)
            if old is None:
                continue
            new = self.maps.get(target, {}).get(old)
            if new is not None:
                setattr(obj, f.attname, new)
            elif f.null:
                # Not in yet (a cycle, a later row) or not in the archive: set once every row is in.
                setattr(obj, f.attname, None)
                self.deferred.append((type(obj), old_pk, f.attname, target, old))
            else:
                raise ArchiveError(f"{label} record {old_pk}: {f.name} points at {target} {old}, which the archive "
                                   "does not hold: the archive is incomplete.")

    def _identity(self, value: str) -> str:
        kind, _, old = (value or "").partition(":")
        target = {"user": USER_LABEL, "team": "sharedtasks.Team"}.get(kind)
        if target and old.isdigit() and int(old) in self.maps.get(target, {}):
            return f"{kind}:{self.maps[target][int(old)]}"
        return value

    def finish(self) -> None:
        unresolved = []
        for model, old_pk, attname, target, old in self.deferred:
            new = self.maps.get(target, {}).get(old)
            if new is None:
                unresolved.append(f"{model._meta.label} {old_pk}.{attname} → {target} {old}")
                continue
            model._base_manager.filter(pk=self.maps[model._meta.label][old_pk]).update(**{attname: new})
        if unresolved:
            self.missing["links_outside_the_archive"] = unresolved
        for obj, m2m in self.m2m:
            for name, old_ids in m2m.items():
                target = related_label(obj._meta.get_field(name)) or ""
                new_ids = [self.maps.get(target, {}).get(i) for i in old_ids]
                getattr(obj, name).set([i for i in new_ids if i is not None])

    def snapshot_entries(self) -> None:
        snapshots = self.maps.get("snapshots.Snapshot", {})
        submissions = self.maps.get("submissions.Submission", {})
        for row in _read_jsonl(self.tar, ENTRIES_MEMBER):
            if row["snapshot"] in snapshots:
                ids = {k: submissions[v] for k, v in row["ids"].items() if v in submissions}
                SnapshotEntryMap.objects.create(snapshot_id=snapshots[row["snapshot"]], ids=ids)


def benchmark_import(path: Path, *, key: bytes | None = None, omit_hidden: bool = False, link_accounts: bool = False,
                     imported_by: str = "") -> ImportReport:
    """Check ``path`` whole, then import it in one transaction; raises :class:`ArchiveError` before any write."""
    checked = archive_check(path, key=key, omit_hidden=omit_hidden)
    manifest = checked.manifest
    with tarfile.open(path, "r:*") as tar:
        importer = _Importer(tar, checked, link_accounts=link_accounts)
        try:
            with transaction.atomic():
                _conflicts(manifest, checked.sha256)
                keys_taken = _snapshot_keys_taken(tar)
                if keys_taken:
                    raise ArchiveError(f"Snapshot(s) {', '.join(keys_taken)} exist here already: a snapshot's key is "
                                       "its permanent address and is never reused. Nothing imported.")
                importer.accounts()
                counts = {BENCHMARK: importer.rows(BENCHMARK, f"data/{BENCHMARK}.jsonl")}
                for spec in ARCHIVED:
                    counts[spec.label] = importer.rows(spec.label, spec.member, identities=spec.identities)
                importer.finish()
                importer.snapshot_entries()
                missing = dict(importer.missing)
                splits = list(importer.maps["leaderboard.Split"].values())
                if checked.secret is None and manifest["hidden"]["mode"] != "none":
                    missing["hidden"] = "omitted"
                    closed = list(Split.objects.filter(pk__in=splits, hidden=True).values_list("pk", flat=True))
                    # No judgments to score against: closed until a curator publishes them again.
                    Split.objects.filter(pk__in=closed).update(accepts_submissions=False)
                    missing["closed_splits"] = closed
                if checked.secret is None:
                    for label, n in manifest["hidden"].get("rows", {}).items():
                        missing[f"{label} rows"] = n
                if manifest.get("missing_files"):
                    missing["files"] = manifest["missing_files"]
                record = ArchiveImport.objects.create(archive_sha256=checked.sha256, manifest=manifest,
                                                      missing=missing, imported_by=imported_by)
                record.datasets.set(importer.maps["leaderboard.Dataset"].values())
                Split.objects.filter(pk__in=splits).update(cache_version=models.F("cache_version") + 1)
                transaction.on_commit(page_generation_bump)
        except BaseException:
            for storage, name in importer.written:
                storage.delete(name)
            raise
    return ImportReport(record=record, records=counts, accounts_created=importer.accounts_created,
                        accounts_linked=importer.accounts_linked, missing=missing)


def _snapshot_keys_taken(tar: tarfile.TarFile) -> list[str]:
    wanted = [r["fields"]["key"] for r in _read_jsonl(tar, "data/snapshots.Snapshot.jsonl")]
    return sorted(Snapshot.objects.filter(key__in=wanted).values_list("key", flat=True))
