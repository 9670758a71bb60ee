"""Reading an archive: every check first (checksums, format, schema, key, conflicts), then one transaction.

Nothing is written before every member's sha256 matches the manifest and the key (if any) opens the hidden
material; then every row is inserted with a new primary key, foreign keys are mapped to the new ones, links to
rows not inserted yet are set at the end, and either all of it is in or none of it is (run files written to
the storage are removed again when the transaction fails).
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import functools
import hashlib
import json
import re
import tarfile
import tempfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from django.apps import apps
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core import serializers
from django.core.exceptions import FieldDoesNotExist, ValidationError
from django.core.files.base import ContentFile
from django.core.serializers.base import DeserializationError
from django.db import DatabaseError, models, transaction
from django.db.migrations.loader import MigrationLoader

from accounts.models import Profile
from catalogue.models import Dataset, Split
from catalogue.page_generation import page_generation_bump
from submissions.provenance import upgrade_legacy_fields

from ..models import ArchiveImport, Snapshot, SnapshotEntryMap
from . import keys
from .spec import ARCHIVED, BENCHMARK, USER_LABEL, archived_labels, related_label
from .writer import ACCOUNTS_MEMBER, ENTRIES_MEMBER, FORMAT, FORMAT_VERSION, HIDDEN_MEMBER, MANIFEST, ArchiveError

#: The app labels an archive of format 1 wrote its records under (until 6 December 2026, when each app's label
#: became its package's name: catalogue/relabel.py); format 2 writes today's.
FORMAT_1_LABELS = {"catalogue": "leaderboard", "campaigns": "sharedtasks"}

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


#: The largest manifest read into memory (the demo's is a few kB; a benchmark of 100,000 files, a few MB).
MANIFEST_MAX_BYTES = 64 * 1024 * 1024
_GZIP_MAGIC = b"\x1f\x8b"
#: Compressions a tar reader would inflate on its own, which an archive never uses (writer: .tar or .tar.gz).
_OTHER_MAGIC = {b"BZh": "bzip2", b"\xfd7zXZ\x00": "xz", b"(\xb5/\xfd": "zstd"}
_HEX64 = re.compile(r"^[0-9a-f]{64}$")


def _caps() -> tuple[int, int]:
    """(the whole archive's inflated bytes, one member's bytes): settings, docs/operations.md."""
    return int(settings.LEXBOARD_ARCHIVE_MAX_BYTES), int(settings.LEXBOARD_ARCHIVE_MAX_MEMBER_BYTES)


def _mib(n: int) -> str:
    return f"{n:,} bytes ({n / (1 << 20):,.1f} MiB)"


@contextlib.contextmanager
def _plain_tar(path: Path) -> Iterator[Path]:
    """``path`` as a plain tar: a gzip is inflated to a scratch file with a running budget, refused at once past
    ``LEXBOARD_ARCHIVE_MAX_BYTES`` (a gzip bomb never reaches the disk whole); other compressions are refused."""
    try:
        with path.open("rb") as fh:
            head = fh.read(8)
    except OSError as exc:
        raise ArchiveError(f"Cannot read {path}: {exc.strerror}.") from exc
    for magic, name in _OTHER_MAGIC.items():
        if head.startswith(magic):
            raise ArchiveError(f"{path} is compressed with {name}: a Lexboard archive is a .tar or a .tar.gz.")
    if not head.startswith(_GZIP_MAGIC):
        yield path
        return
    cap, _ = _caps()
    with tempfile.TemporaryDirectory(prefix="lexboard-import-") as scratch:
        plain = Path(scratch) / "archive.tar"
        inflated = 0

        def budget(piece: bytes) -> None:
            nonlocal inflated
            inflated += len(piece)
            if inflated > cap:
                raise ArchiveError(f"{path} inflates past {_mib(cap)}, the most an archive may hold "
                                   "(LEXBOARD_ARCHIVE_MAX_BYTES): refused, nothing imported.")

        try:
            with path.open("rb") as src, plain.open("wb") as out:
                inflate, fed = zlib.decompressobj(16 + zlib.MAX_WBITS), False
                for chunk in iter(functools.partial(src.read, 1 << 20), b""):
                    while chunk:
                        if inflate.eof:  # a second gzip member follows (gzip files may be concatenated)
                            inflate, fed = zlib.decompressobj(16 + zlib.MAX_WBITS), False
                        # At most 1 MiB out per call: the budget is checked before the next MiB is made.
                        piece, fed = inflate.decompress(chunk, 1 << 20), True
                        chunk = inflate.unused_data if inflate.eof else inflate.unconsumed_tail
                        budget(piece)
                        out.write(piece)
                while fed and not inflate.eof:  # what the last input still holds
                    piece = inflate.decompress(b"", 1 << 20)
                    if not piece:
                        raise ArchiveError(f"{path} ends before its gzip stream does: the archive is truncated; "
                                           "nothing imported.")
                    budget(piece)
                    out.write(piece)
        except zlib.error as exc:
            raise ArchiveError(f"{path} is not a valid gzip ({exc}): the archive is damaged; nothing imported.") from exc
        except OSError as exc:
            raise ArchiveError(f"Cannot inflate {path} to {scratch}: {exc.strerror}.") from exc
        yield plain


def _json(data: bytes, where: str) -> Any:
    """JSON from an archive's bytes, or one sentence naming ``where`` (never a RecursionError or a ValueError)."""
    try:
        return json.loads(data)
    except RecursionError as exc:
        raise ArchiveError(f"{where} nests its JSON too deeply to be a Lexboard archive's: refused, nothing "
                           "imported.") from exc
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, an integer past Python's digit limit
        raise ArchiveError(f"{where} is not valid JSON ({exc}): refused, nothing imported.") from exc


def _expect(ok: bool, what: str) -> None:
    if not ok:
        raise ArchiveError(f"manifest.json: {what}; not a manifest export_benchmark writes, nothing imported.")


def _manifest_shape(manifest: Any) -> dict[str, Any]:
    """The keys and types the reader relies on (docs/archive.md), each refused by name when wrong or missing."""
    _expect(isinstance(manifest, dict), "is not a JSON object")
    _expect(manifest.get("format") == FORMAT, f"says format {manifest.get('format')!r}, not {FORMAT!r}")
    version = manifest.get("format_version")
    _expect(type(version) is int and version >= 1, f"format_version is {version!r}, not a whole number")
    if version > FORMAT_VERSION:
        raise ArchiveError(f"The archive's format version is {version}; this Lexboard reads up to "
                           f"{FORMAT_VERSION}: upgrade it first.")
    members = manifest.get("members")
    _expect(isinstance(members, list), "'members' is missing or not a list")
    for n, m in enumerate(members):
        _expect(isinstance(m, dict) and isinstance(m.get("path"), str) and type(m.get("size")) is int
                and m["size"] >= 0 and isinstance(m.get("sha256"), str) and bool(_HEX64.match(m["sha256"])),
                f"members[{n}] is not {{\"path\": text, \"size\": bytes, \"sha256\": 64 hex digits}}")
    for key, kind in (("schema", dict), ("benchmark", dict), ("hidden", dict), ("datasets", list),
                      ("models", list)):
        _expect(isinstance(manifest.get(key), kind), f"{key!r} is missing or not a JSON {'object' if kind is dict else 'list'}")
    _expect(all(isinstance(k, str) and isinstance(v, str) for k, v in manifest["schema"].items()),
            "'schema' is not {app: migration}")
    _expect(isinstance(manifest["benchmark"].get("slug"), str), "'benchmark' has no slug")
    _expect(all(isinstance(d, str) for d in manifest["datasets"]), "'datasets' is not a list of slugs")
    hidden = manifest["hidden"]
    _expect(hidden.get("mode") in ("none", "omitted", "encrypted"), f"hidden.mode is {hidden.get('mode')!r}")
    if hidden["mode"] == "encrypted":
        _expect(hidden.get("member") == HIDDEN_MEMBER and isinstance(hidden.get("key_fingerprint"), str),
                f"hidden material is encrypted but hidden.member is not {HIDDEN_MEMBER!r} with a key_fingerprint")
    _expect(isinstance(hidden.get("splits", []), list) and isinstance(hidden.get("rows", {}), dict)
            and all(type(v) is int for v in hidden.get("rows", {}).values()),
            "hidden.splits or hidden.rows has the wrong type")
    _expect(isinstance(manifest.get("missing_files", []), list), "'missing_files' is not a list")
    return manifest


def archive_check(path: Path, *, key: bytes | None = None, omit_hidden: bool = False) -> CheckedArchive:
    """Every member against the manifest, the format, the key: raises :class:`ArchiveError` naming what is wrong."""
    with _plain_tar(path) as plain:
        return _check(path, plain, key=key, omit_hidden=omit_hidden)


def _check(path: Path, plain: Path, *, key: bytes | None, omit_hidden: bool) -> CheckedArchive:
    digest = hashlib.sha256()
    try:
        with path.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
    except OSError as exc:
        raise ArchiveError(f"Cannot read {path}: {exc.strerror}.") from exc
    try:
        tar = tarfile.open(plain, "r:")
    except (tarfile.TarError, OSError) as exc:
        raise ArchiveError(f"{path} is not a tar archive (nor a gzip of one): not a Lexboard archive; nothing "
                           "imported.") from exc
    _, member_cap = _caps()
    with tar:
        try:
            manifest, found = _members_checked(tar, member_cap)
        except (tarfile.TarError, EOFError, OSError) as exc:
            raise ArchiveError(f"{path} ends in the middle of a member or a header ({exc}): the archive is "
                               "truncated or damaged; nothing imported.") from exc
        listed = {m["path"]: (m["size"], m["sha256"]) for m in manifest["members"]}
        for name, (size, sha) in sorted(listed.items()):
            if name not in found:
                raise ArchiveError(f"{name}: listed in the manifest, missing from the archive; nothing imported.")
            if found[name] != (size, sha):
                raise ArchiveError(f"{name}: sha256 {found[name][1]} ({found[name][0]} bytes), the manifest says "
                                   f"{sha} ({size} bytes): the member was changed or damaged; nothing imported.")
        _check_schema(manifest)
        hidden = _open_hidden(tar, manifest, key=key, omit_hidden=omit_hidden)
    return CheckedArchive(path=path, sha256=digest.hexdigest(), manifest=manifest, secret=hidden)


def _members_checked(tar: tarfile.TarFile, member_cap: int) -> tuple[dict[str, Any], dict[str, tuple[int, str]]]:
    """The manifest (the first member) and each other member's (size, sha256); a member is refused by its
    header, before a byte of it is read, when its name or type is not an archive's or it is larger than the
    manifest declares or than ``LEXBOARD_ARCHIVE_MAX_MEMBER_BYTES``."""
    found: dict[str, tuple[int, str]] = {}
    manifest: dict[str, Any] | None = None
    listed: dict[str, int] = {}
    for info in tar:
        if not info.isfile() or not _MEMBER_NAME.match(info.name):
            kind = ("a symbolic link" if info.issym() else "a hard link" if info.islnk() else
                    "a device or FIFO" if info.isdev() else "a folder" if info.isdir() else
                    "a name (absolute, climbing out with .., or unknown)" if info.isfile() else "a special member")
            raise ArchiveError(f"{info.name}: {kind}, which a Lexboard archive never has (it holds regular files "
                               "named manifest.json, data/…, blobs/…, files/…, hidden/… only); refused, nothing "
                               "imported.")
        if info.name in found:
            raise ArchiveError(f"{info.name}: twice in the archive; refused, nothing imported.")
        if manifest is None and info.name != MANIFEST:
            raise ArchiveError(f"{info.name}: comes before manifest.json, which export_benchmark writes first; "
                               "refused, nothing imported.")
        if info.name == MANIFEST:
            if info.size > MANIFEST_MAX_BYTES:
                raise ArchiveError(f"manifest.json: {_mib(info.size)}, past the {_mib(MANIFEST_MAX_BYTES)} a "
                                   "manifest may have; refused, nothing imported.")
        elif info.name not in listed:
            raise ArchiveError(f"{info.name}: in the archive but not in its manifest; refused, nothing imported.")
        elif info.size > listed[info.name]:
            raise ArchiveError(f"{info.name}: {info.size:,} bytes in the tar, the manifest says {listed[info.name]:,}: "
                               "the member was changed or damaged; refused before reading it, nothing imported.")
        if info.size > member_cap:
            raise ArchiveError(f"{info.name}: {_mib(info.size)}, past the {_mib(member_cap)} a member may have "
                               "(LEXBOARD_ARCHIVE_MAX_MEMBER_BYTES); refused, nothing imported.")
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
            manifest = _manifest_shape(_json(bytes(data), "manifest.json"))
            listed = {m["path"]: m["size"] for m in manifest["members"]}
    if manifest is None:
        raise ArchiveError("The archive has no manifest.json: not a Lexboard archive; nothing imported.")
    return manifest, found


def _check_schema(manifest: dict[str, Any]) -> None:
    nodes = set(MigrationLoader(None, ignore_no_migrations=True).graph.nodes)
    renamed = {old: new for new, old in FORMAT_1_LABELS.items()} if manifest.get("format_version") == 1 else {}
    for app, name in sorted(manifest.get("schema", {}).items()):
        if (renamed.get(app, app), name) not in nodes:
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
    try:
        payload = _json(keys.decrypt(key, _member_bytes(tar, member), member=member), member)
    except keys.ArchiveKeyError as exc:
        raise ArchiveError(str(exc)) from exc
    if not (isinstance(payload, dict) and isinstance(payload.get("fields", {}), dict)
            and isinstance(payload.get("rows", {}), dict)):
        raise ArchiveError(f"{member} opens but does not hold {{\"fields\": …, \"rows\": …}}: refused, nothing "
                           "imported.")
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
    """A member's records, each a JSON object (or one sentence naming the member and the line)."""
    out = []
    for n, line in enumerate(_member_bytes(tar, member).splitlines(), 1):
        if line.strip():
            record = _json(line, f"{member} line {n}")
            if not isinstance(record, dict):
                raise ArchiveError(f"{member} line {n} is not a JSON object: refused, nothing imported.")
            out.append(record)
    return out


#: What a crafted record makes Python or the database raise: turned into one sentence naming the member.
_RECORD_ERRORS = (LookupError, TypeError, ValueError, AttributeError, ValidationError, DatabaseError)


@contextlib.contextmanager
def _refusing(member: str, record: dict[str, Any] | None = None) -> Iterator[None]:
    """A record of ``member`` the format does not allow (a key missing, a wrong type, a row the database refuses)
    is refused in one sentence naming the member and the record's pk (``record["pk"]``), never a traceback."""
    try:
        yield
    except _RECORD_ERRORS as exc:
        pk = (record or {}).get("pk")
        raise ArchiveError(f"{member}{f' record {pk}' if pk is not None else ''}: not a record export_benchmark "
                           f"writes ({type(exc).__name__}: {str(exc)[:200]}); nothing imported.") from exc


def _member_bytes(tar: tarfile.TarFile, member: str) -> bytes:
    """A member's bytes (checked against the manifest already), or one sentence when the archive lacks it."""
    try:
        fh: IO[bytes] | None = tar.extractfile(member)
    except KeyError:
        fh = None
    if fh is None:
        raise ArchiveError(f"{member}: named by a record but not in the archive (or not a file); refused, "
                           "nothing imported.")
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
        """Every record of ``member``; a record the format does not allow is refused naming the member and its pk."""
        record: dict[str, Any] = {}
        written = self.written_label(label)
        member = member.replace(f"data/{label}.jsonl", f"data/{written}.jsonl")
        with _refusing(member, record):
            return self._rows(label, member, written=written, identities=identities, current=record)

    def written_label(self, label: str) -> str:
        """The label ``label``'s records were written under: today's, or the app label of format 1's time."""
        app, model = label.split(".")
        return f"{FORMAT_1_LABELS.get(app, app)}.{model}" if self.checked.manifest["format_version"] == 1 else label

    def _rows(self, label: str, member: str, *, written: str, identities: tuple[str, ...],
              current: dict[str, Any]) -> int:
        model = apps.get_model(label)
        self.maps.setdefault(label, {})
        secret = self.checked.secret or {}
        payload = secret.get("fields", {}).get(written, {})
        # Whole rows that were hidden material join the others in primary-key order (the order links rely on).
        records = sorted(_read_jsonl(self.tar, member) + secret.get("rows", {}).get(written, []),
                         key=lambda r: r["pk"])
        for record in records:
            current.clear()
            current["pk"] = record.get("pk")
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
            if written != label and isinstance(record.get("model"), str):  # format 1: the model's label of then
                record["model"] = model._meta.label_lower
            obj, m2m = self._deserialize(label, member, record)
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

    def _deserialize(self, label: str, member: str, record: dict[str, Any]) -> tuple[models.Model, dict[str, list[Any]]]:
        try:
            found = next(iter(serializers.deserialize("python", [record])))
        except FieldDoesNotExist as exc:
            raise ArchiveError(f"{label} record {record.get('pk')}: {exc}. The archive comes from a newer Lexboard "
                               f"({self.checked.manifest.get('lexboard_version')}): upgrade this host.") from exc
        except DeserializationError as exc:  # a value its field refuses: the record was crafted, not written
            raise ArchiveError(f"{member} record {record.get('pk')}: not a record export_benchmark "
                               f"writes ({' '.join(str(exc).split())[:200]}); nothing imported.") from exc
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
        target = {"user": USER_LABEL, "team": "campaigns.Team"}.get(kind)
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
    with _plain_tar(path) as plain:
        checked = _check(path, plain, key=key, omit_hidden=omit_hidden)
        return _import(plain, checked, link_accounts=link_accounts, imported_by=imported_by)


def _import(plain: Path, checked: CheckedArchive, *, link_accounts: bool, imported_by: str) -> ImportReport:
    manifest = checked.manifest
    with tarfile.open(plain, "r:") as tar:
        importer = _Importer(tar, checked, link_accounts=link_accounts)
        try:
            with transaction.atomic():
                _conflicts(manifest, checked.sha256)
                with _refusing("data/snapshots.Snapshot.jsonl"):
                    keys_taken = _snapshot_keys_taken(tar)
                if keys_taken:
                    raise ArchiveError(f"Snapshot(s) {', '.join(keys_taken)} exist here already: a snapshot's key is "
                                       "its permanent address and is never reused. Nothing imported.")
                with _refusing(ACCOUNTS_MEMBER):
                    importer.accounts()
                counts = {BENCHMARK: importer.rows(BENCHMARK, f"data/{BENCHMARK}.jsonl")}
                for spec in ARCHIVED:
                    counts[spec.label] = importer.rows(spec.label, spec.member, identities=spec.identities)
                with _refusing("the links between records"):
                    importer.finish()
                with _refusing(ENTRIES_MEMBER):
                    importer.snapshot_entries()
                missing = dict(importer.missing)
                splits = list(importer.maps["catalogue.Split"].values())
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
                record.datasets.set(importer.maps["catalogue.Dataset"].values())
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
