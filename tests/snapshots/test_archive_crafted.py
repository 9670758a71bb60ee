"""Crafted archives (docs/archive.md, "What a crafted archive gets back"): ``import_benchmark`` refuses each in one
sentence naming what is wrong and which member, never with a traceback, and imports nothing; compressed bytes
are inflated with a running budget (a gzip bomb is refused at the cap, naming it).

The source archive is the tiny dataset exported in this test's database; the crafted ones are rewritten from it,
with the manifest's size and sha256 of a changed member fixed where the case is about what lies behind the
checksums (the manifest itself is not signed: whoever crafts a member can list it).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import re
import subprocess
import sys
import tarfile
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError

from catalogue.models import Dataset
from snapshots.archive.writer import benchmark_export
from snapshots.models import ArchiveImport
from submissions.models import Submission
from tests.conftest import run_storage_at

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
RESULTS = "data/submissions.Result.jsonl"


@pytest.fixture
def storage(tmp_path):
    with run_storage_at(tmp_path / "runs") as location:
        yield location


@pytest.fixture
def archive(tiny_dataset, make_entry, storage, tmp_path):
    """The tiny benchmark (a hidden and a public split, two entries each) exported without its hidden material;
    then the dataset here renamed, so the archive's slug is free and an import could go through."""
    owner = get_user_model().objects.create_user("owner", "owner@example.org", "a password 1234")
    for split in tiny_dataset.splits.all():
        make_entry(split, owner, "BM25", {"R@10": 0.5, "MAP@10": 0.25})
        make_entry(split, owner, "TF-IDF", {"R@10": 0.25, "MAP@10": 0.125})
    path = tmp_path / "tiny.tar"
    benchmark_export(benchmark_slug="tiny", out=path, omit_hidden=True)
    Dataset.objects.filter(slug="tiny").update(slug="tiny-here")
    return path


def _members(path: Path) -> list[tuple[str, bytes]]:
    with tarfile.open(path) as tar:
        return [(m.name, tar.extractfile(m).read()) for m in tar]  # type: ignore[union-attr]


def _write(path: Path, members: list[tuple[str, bytes]], *, mode: str = "w") -> Path:
    with tarfile.open(path, mode) as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def _rewrite(src: Path, dst: Path, changes: dict[str, bytes], *, listed: bool = True, mode: str = "w") -> Path:
    """``src`` with members replaced (or added); ``listed``: the manifest gives their new size and sha256 (unless
    the manifest is the member replaced)."""
    members = dict(_members(src))
    manifest = json.loads(members["manifest.json"])
    members.update(changes)
    if listed and "manifest.json" not in changes:
        entries = {m["path"]: m for m in manifest["members"]}
        for name, data in changes.items():
            if name != "manifest.json":
                entries[name] = {"path": name, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
        manifest["members"] = sorted(entries.values(), key=lambda m: m["path"])
        members["manifest.json"] = json.dumps(manifest).encode()
    return _write(dst, [("manifest.json", members.pop("manifest.json")), *members.items()], mode=mode)


def _with_manifest(src: Path, dst: Path, edit: Callable[[dict], object]) -> Path:
    members = dict(_members(src))
    manifest = json.loads(members["manifest.json"])
    edit(manifest)
    members["manifest.json"] = json.dumps(manifest).encode()
    return _write(dst, list(members.items()))


def _special(src: Path, dst: Path, info: tarfile.TarInfo) -> Path:
    """``src`` with one more member that is not a regular file (a link, a device)."""
    with tarfile.open(src) as tar, tarfile.open(dst, "w") as out:
        for m in tar:
            out.addfile(m, tar.extractfile(m))
        out.addfile(info)
    return dst


def _link(name: str, kind: bytes, target: str) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, target
    return info


def _device() -> tarfile.TarInfo:
    info = tarfile.TarInfo("data/catalogue.Topic.jsonl")
    info.type, info.devmajor, info.devminor = tarfile.CHRTYPE, 1, 3  # /dev/null's numbers
    return info


def _truncated(src: Path, dst: Path, *, gz: bool) -> Path:
    """``src`` cut off: a .tar.gz two thirds into its gzip stream, a .tar in the middle of its last member's bytes."""
    whole = _rewrite(src, dst.with_suffix(".whole"), {}, mode="w:gz" if gz else "w")
    if gz:
        cut = whole.stat().st_size * 2 // 3
    else:
        with tarfile.open(whole) as tar:
            last = [m for m in tar if m.size > 100][-1]
            cut = last.offset_data + last.size // 2
    dst.write_bytes(whole.read_bytes()[:cut])
    return dst


def _result_record_broken(src: Path, dst: Path) -> Path:
    """A Result record whose foreign key is a word: checksums right, a record the format does not allow."""
    lines = dict(_members(src))[RESULTS].splitlines()
    record = json.loads(lines[-1])
    record["fields"]["qrels_version"] = "the first one"
    return _rewrite(src, dst, {RESULTS: b"\n".join([*lines[:-1], json.dumps(record).encode()]) + b"\n"})


def _deep(n: int = 100_000) -> bytes:
    return b"[" * n + b"]" * n


#: name → (how the archive is crafted, what the one sentence must say). Comments: refused before this change or
#: not ("traceback": a raw Python traceback before).
CASES: dict[str, tuple[Callable[[Path, Path], Path], str]] = {
    # Refused correctly before.
    "tampered member": (lambda a, d: _rewrite(a, d, {RESULTS: dict(_members(a))[RESULTS].replace(b'"', b"'", 1)},
                                              listed=False),
                        rf"^{RESULTS}: sha256 .* the member was changed or damaged; nothing imported\.$"),
    "../ name": (lambda a, d: _rewrite(a, d, {"../evil.jsonl": b"{}\n"}), r"^\.\./evil\.jsonl: a name .*refused"),
    "absolute name": (lambda a, d: _rewrite(a, d, {"/etc/cron.d/evil": b"* * * * * root true\n"}),
                      r"^/etc/cron\.d/evil: a name .*refused"),
    "symlink": (lambda a, d: _special(a, d, _link("files/" + "0" * 64, tarfile.SYMTYPE, "/etc/passwd")),
                r"^files/0{64}: a symbolic link, .*refused"),
    "hardlink": (lambda a, d: _special(a, d, _link("files/" + "1" * 64, tarfile.LNKTYPE, "manifest.json")),
                 r"^files/1{64}: a hard link, .*refused"),
    "device": (lambda a, d: _special(a, d, _device()), r"^data/catalogue\.Topic\.jsonl: a device or FIFO, .*refused"),
    "not an archive": (lambda a, d: (d.write_bytes(b"q1 Q0 d1 1 1.0 run\n" * 100), d)[1],
                       r"is not a tar archive \(nor a gzip of one\): not a Lexboard archive"),
    "manifest not JSON": (lambda a, d: _rewrite(a, d, {"manifest.json": b"{'format': 1"}),
                          r"^manifest\.json is not valid JSON \(.*\): refused, nothing imported\.$"),
    # A raw traceback before.
    "truncated tar": (lambda a, d: _truncated(a, d, gz=False), r"truncated or damaged; nothing imported\.$"),
    "truncated tar.gz": (lambda a, d: _truncated(a, d, gz=True), r"the archive is truncated; nothing imported\.$"),
    "manifest nested deeply": (lambda a, d: _rewrite(a, d, {"manifest.json": _deep()}),
                               r"^manifest\.json nests its JSON too deeply"),
    "member nested deeply": (lambda a, d: _rewrite(a, d, {RESULTS: _deep() + b"\n"}),
                             rf"^{RESULTS} line 1 nests its JSON too deeply"),
    "manifest with a wrong type": (lambda a, d: _with_manifest(
        a, d, lambda m: m["members"][0].update(size=str(m["members"][0]["size"]))), r"^manifest\.json: members\[0\]"),
    "manifest without a key": (lambda a, d: _with_manifest(a, d, lambda m: m.pop("hidden")),
                               r"^manifest\.json: 'hidden' is missing"),
    "manifest as a list": (lambda a, d: _rewrite(a, d, {"manifest.json": b"[1, 2, 3]"}),
                           r"^manifest\.json: is not a JSON object"),
    "record the format does not allow": (_result_record_broken,
                                         rf"^{RESULTS} record \d+: not a record export_benchmark writes"),
    # Accepted whole before: a member's bytes hashed however large its header said it was.
    "member larger than declared": (
        lambda a, d: _write(d, [(n, data + b" " * 5_000_000 if n == RESULTS else data) for n, data in _members(a)]),
        rf"^{RESULTS}: 5,00\d,\d+ bytes in the tar, the manifest says [\d,]+: .*refused before reading it"),
}


@pytest.mark.parametrize("case", CASES)
def test_a_crafted_archive_is_refused_in_one_sentence_naming_what_and_where(case, archive, tmp_path, storage):
    craft, says = CASES[case]
    crafted = craft(archive, tmp_path / "crafted.tar")
    with pytest.raises(CommandError) as refused:
        call_command("import_benchmark", str(crafted), "--omit-hidden")
    message = str(refused.value)
    assert "\n" not in message and message.endswith("."), message
    assert re.search(says, message), message
    # Nothing imported: no dataset, no account, no run file, no record of an import.
    assert not Dataset.objects.filter(slug="tiny").exists() and not ArchiveImport.objects.exists()
    assert not get_user_model().objects.filter(username="owner-2").exists()
    assert Submission.objects.count() == 4 and len(list(storage.rglob("*.txt"))) == 4


def test_the_archive_itself_imports_and_a_slug_that_exists_is_refused(archive, storage, tmp_path):
    """The crafted cases above fail for what was crafted: the archive they come from imports; once its dataset is
    here, the same rows in another archive (another sha256) are refused by their slug."""
    call_command("import_benchmark", str(archive), "--omit-hidden", stdout=io.StringIO())
    assert Submission.objects.filter(split__dataset__slug="tiny").count() == 4
    again = _rewrite(archive, tmp_path / "again.tar.gz", {}, mode="w:gz")
    with pytest.raises(CommandError, match=r"^Dataset\(s\) tiny exist here already: an archive never overwrites"):
        call_command("import_benchmark", str(again), "--omit-hidden")
    assert ArchiveImport.objects.count() == 1


def test_the_command_line_says_one_sentence_and_exits_non_zero_without_a_traceback(archive, tmp_path):
    """What an operator sees for the two refusals that were tracebacks in #36: a truncated archive, deep JSON."""
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "DJANGO_SETTINGS_MODULE")}
    env.update(LEXBOARD_VAR_DIR=str(tmp_path / "var"), DJANGO_SETTINGS_MODULE="lexboard.settings")
    for crafted in (_truncated(archive, tmp_path / "cut.tar.gz", gz=True),
                    _rewrite(archive, tmp_path / "deep.tar", {"manifest.json": _deep()})):
        done = subprocess.run([sys.executable, "manage.py", "import_benchmark", str(crafted), "--omit-hidden"],
                              cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 1, done
        assert "Traceback" not in done.stderr and done.stderr.startswith("CommandError: "), done.stderr
        assert done.stderr.strip().count("\n") == 0, done.stderr


# --- compressed bytes: a running budget --------------------------------------------------------------


def _gzip_bomb(members: list[tuple[str, bytes]], *, zeros: int, repeat: int) -> bytes:
    """A .tar.gz: the archive's members, then ``repeat`` gzip members of ``zeros`` zero bytes each (inflating
    to zeros × repeat), then bytes that are no gzip at all (a reader that reaches them did not stop at its cap)."""
    head = io.BytesIO()
    with tarfile.open(fileobj=head, mode="w") as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    squeeze = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = squeeze.compress(b"\0" * zeros) + squeeze.flush()
    return gzip.compress(head.getvalue()[:-1024]) + block * repeat + b"this is where the reader stops"


def test_a_gzip_bomb_is_refused_at_the_archive_cap_naming_it(archive, tmp_path, settings):
    settings.LEXBOARD_ARCHIVE_MAX_BYTES = 8 << 20
    bomb = tmp_path / "bomb.tar.gz"
    bomb.write_bytes(_gzip_bomb(_members(archive), zeros=16 << 20, repeat=64))  # 1 GiB inflated, ~1 MB here
    assert bomb.stat().st_size < 2 << 20
    with pytest.raises(CommandError) as refused:
        call_command("import_benchmark", str(bomb), "--omit-hidden")
    message = str(refused.value)
    assert "inflates past 8,388,608 bytes (8.0 MiB), the most an archive may hold (LEXBOARD_ARCHIVE_MAX_BYTES)" \
        in message, message
    assert not Dataset.objects.filter(slug="tiny").exists()


def test_a_member_past_the_member_cap_is_refused_by_its_header(archive, tmp_path, settings):
    settings.LEXBOARD_ARCHIVE_MAX_MEMBER_BYTES = 4 << 20
    big = b"\0" * (12 << 20)  # a blob listed honestly in the manifest: only the cap refuses it
    crafted = _rewrite(archive, tmp_path / "big.tar.gz", {"blobs/" + hashlib.sha256(big).hexdigest(): big},
                       mode="w:gz")
    with pytest.raises(CommandError, match=r"^blobs/[0-9a-f]{64}: 12,582,912 bytes \(12\.0 MiB\), past the "
                                           r"4,194,304 bytes \(4\.0 MiB\) a member may have"):
        call_command("import_benchmark", str(crafted), "--omit-hidden")


def test_other_compressions_are_refused_not_inflated(archive, tmp_path):
    import bz2

    crafted = tmp_path / "tiny.tar.bz2"
    crafted.write_bytes(bz2.compress(archive.read_bytes()))
    with pytest.raises(CommandError, match=r"is compressed with bzip2: a Lexboard archive is a \.tar or a \.tar\.gz"):
        call_command("import_benchmark", str(crafted), "--omit-hidden")
