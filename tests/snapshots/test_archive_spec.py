"""The archive's list of models is decided about as models are added, and hidden labels never leave in clear."""

from __future__ import annotations

import base64
import hashlib
import json
import tarfile

import pytest
from django.apps import apps
from django.core.exceptions import FieldDoesNotExist
from django.core.management import CommandError, call_command
from django.db import models

from catalogue.models import QrelsVersion
from snapshots.archive import keys
from snapshots.archive.reader import archive_check
from snapshots.archive.spec import ARCHIVED, EXCLUDED, unaccounted_models


def test_every_model_that_points_at_an_archived_one_is_archived_or_excluded_with_a_reason():
    assert unaccounted_models() == [], (
        "add these models to snapshots/archive/spec.py: ARCHIVED (in import order, with their scope and hidden "
        "fields) or EXCLUDED (with the reason they stay on their host; docs/archive.md lists them)")


def test_the_spec_names_real_models_fields_and_lookups(db):
    labels = [spec.label for spec in ARCHIVED]
    assert len(labels) == len(set(labels)) and not set(labels) & set(EXCLUDED)
    for label, reason in EXCLUDED.items():
        apps.get_model(label)
        assert len(reason) > 20
    for spec in ARCHIVED:
        model = spec.model
        for name in (*spec.hidden_fields, *spec.dropped, *spec.identities):
            try:
                model._meta.get_field(name)
            except FieldDoesNotExist:
                pytest.fail(f"{spec.label}.{name} is named in the archive's spec but the model has no such field")
        lookup = f"{spec.scope}__in" if spec.scope else "pk__in"
        assert list(model._base_manager.filter(**{lookup: [0]})) == []
        if spec.hidden_rows:
            assert not any(isinstance(f, models.FileField) for f in model._meta.concrete_fields), (
                f"{spec.label}: a file of a hidden row would have to travel encrypted too")
        if spec.hidden_fields or spec.hidden_rows:
            assert spec.split, f"{spec.label}: hidden material needs the lookup to its split"
            assert list(model._base_manager.filter(**{f"{spec.split}__hidden": True})[:1]) is not None


def test_export_refuses_a_hidden_split_in_clear(tiny_dataset, tmp_path):
    with pytest.raises(CommandError, match=r"tiny/test: hidden split\(s\); their judgments, .* never leave in clear"):
        call_command("export_benchmark", "tiny", "-o", str(tmp_path / "tiny.tar"))
    assert not (tmp_path / "tiny.tar").exists()


def test_an_encrypted_export_lists_every_member_with_its_sha256_and_no_hidden_judgment_in_clear(tiny_dataset,
                                                                                                tmp_path):
    keys.key_generate(tmp_path / "key")
    call_command("export_benchmark", "tiny", "-o", str(tmp_path / "tiny.tar.gz"), "--key-file", str(tmp_path / "key"))

    with tarfile.open(tmp_path / "tiny.tar.gz") as tar:
        members = {m.name: tar.extractfile(m).read() for m in tar}  # type: ignore[union-attr]
    manifest = json.loads(members.pop("manifest.json"))
    assert {m["path"]: (m["size"], m["sha256"]) for m in manifest["members"]} == {
        name: (len(data), hashlib.sha256(data).hexdigest()) for name, data in members.items()}
    assert manifest["hidden"]["mode"] == "encrypted" and manifest["hidden"]["splits"] == ["tiny/test"]
    assert manifest["hidden"]["key_fingerprint"] == keys.fingerprint(keys.key_load(str(tmp_path / "key")) or b"")
    hidden = QrelsVersion.objects.get(split__dataset=tiny_dataset, split__name="test")
    public = QrelsVersion.objects.get(split__dataset=tiny_dataset, split__name="dev")
    assert bytes(hidden.qrels_gz) == bytes(public.qrels_gz)  # the same judgments: stored once, as the public blob
    records = [json.loads(line) for line in members["data/catalogue.QrelsVersion.jsonl"].splitlines()]
    by_split = {r["fields"]["split"]: r for r in records}
    assert by_split[hidden.split_id]["hidden"] == ["n_judgments", "n_relevant", "qrels_gz", "sha256"]
    assert "qrels_gz" not in by_split[hidden.split_id]["fields"]
    assert by_split[public.split_id]["fields"]["qrels_gz"] == {"blob": hashlib.sha256(bytes(public.qrels_gz)).hexdigest()}
    opened = archive_check(tmp_path / "tiny.tar.gz", key=keys.key_load(str(tmp_path / "key"))).secret
    assert opened is not None
    assert base64.b64decode(opened["fields"]["catalogue.QrelsVersion"][str(hidden.pk)]["qrels_gz"]) == bytes(hidden.qrels_gz)
