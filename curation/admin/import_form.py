"""The form of the dataset's "Import files" view: one release's files, as the command line takes them."""

from __future__ import annotations

from dataclasses import replace

from django import forms
from django.conf import settings

from catalogue.importers import IMPORTERS, Importer, ImportRefused, Release, Takes, files_from_uploads
from catalogue.importers.base import DatasetFileError
from catalogue.models import Dataset, Topic
from evaluation.errors import Problem


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    def __init__(self, *args, **kwargs):
        kwargs.setdefault("widget", MultipleFileInput())
        kwargs.setdefault("allow_empty_file", True)  # the importer's refusal names the file and the fix
        super().__init__(*args, **kwargs)

    def clean(self, data, initial=None):
        single = super().clean
        if isinstance(data, (list, tuple)):
            return [single(d, initial) for d in data]
        return [single(data, initial)] if data else []


class ImportForm(forms.Form):
    """The files of one release, as the command line takes them."""

    format = forms.ChoiceField(
        choices=[(name, importer.label) for name, importer in IMPORTERS.items()],
        help_text="A release folder's files go in Files (several at once or one zip of the folder); one split's "
        "topics, qrels and corpus ids in the fields below; one split's examples (classification and NER datasets) "
        "in Files, with Split and Hidden",
    )
    # A declared field: Django's form metaclass moves it to base_fields, so BaseForm.files (the uploads) stays.
    files = MultipleFileField(  # type: ignore[assignment]
        required=False,
        help_text="bsard or beir: the released files, several at once or one zip of the folder",
    )
    hidden_splits = forms.CharField(
        initial="test", required=False, help_text="beir: splits with hidden labels, separated by commas"
    )
    split = forms.SlugField(required=False, max_length=32, help_text="trec, classification: the split's name, e.g. test")
    topics = forms.FileField(
        required=False, allow_empty_file=True,
        help_text="trec: qid<TAB>text[<TAB>category[<TAB>subcategory]], or <top> SGML. Needed for a new split; "
                  "leave it out for a new qrels version (the split's topics are then not touched). A category the "
                  "file leaves empty keeps the topic's.",
    )
    qrels = forms.FileField(required=False, allow_empty_file=True, help_text="trec: qid 0 docid grade")
    corpus_ids = forms.FileField(
        required=False, allow_empty_file=True, help_text="trec (optional): one document id per line"
    )
    hidden = forms.BooleanField(
        initial=True, required=False, help_text="trec, classification: the split's labels are hidden"
    )
    publish = forms.BooleanField(
        required=False,
        help_text="Publish new judgments at once and rescore the split's submissions "
        "(a split's first qrels version is always published)",
    )
    note = forms.CharField(required=False, max_length=300, help_text="Stored with a new qrels version")
    small_change_reason = forms.CharField(
        required=False, max_length=300, label="Reason for a small change",
        help_text="With Publish, on a hidden split: a version that changes fewer judgments than the split's "
                  "minimum batch is refused unless you say here why it cannot wait (a wrong judgment fixed); the "
                  "reason is recorded and shown in the qrels history, so do not name the topic or document.",
    )
    dry_run = forms.BooleanField(required=False, label="Check only", help_text="Report what would change; write nothing")

    def clean(self):
        data = super().clean()
        assert data is not None  # Form.clean returns cleaned_data
        fmt = data.get("format")
        importer = IMPORTERS.get(fmt or "")
        if importer is None:  # no choice, or not one of the registry's: the field says so
            return data
        if importer.takes is Takes.SPLIT_FILES:
            for name in ("split", "qrels"):
                if not data.get(name):
                    self.add_error(name, f"Needed for the {fmt} format.")
        elif importer.takes is Takes.EXAMPLES:
            if not data.get("split"):
                self.add_error("split", f"Needed for the {fmt} format.")
            if len(data.get("files") or []) != 1:
                self.add_error("files", "Choose one file: the split's examples (JSONL or CSV).")
        elif not data.get("files"):
            self.add_error("files", f"Choose the {fmt} release files (or a zip of its folder).")
        return data

    def parse(self, *, dataset=None):
        """The parsed release (raises ImportRefused with file:line: reason lines)."""
        data = self.cleaned_data
        importer = IMPORTERS[data["format"]]
        given = Release(
            split=data["split"], hidden=data["hidden"], task=dataset.task if dataset is not None else "single",
            hidden_splits=tuple(h.strip() for h in (data.get("hidden_splits") or "").split(",") if h.strip()),
        )
        if importer.predictions and dataset is not None and dataset.task == Dataset.Task.RETRIEVAL:
            retrieval = ", ".join(name for name, other in IMPORTERS.items() if not other.predictions)
            reason = (f"{dataset} is a retrieval dataset: import {retrieval} files, or set its task to a "
                      "classification or NER task first")
            name = data["files"][0].name if data.get("files") else data["format"]
            raise ImportRefused([DatasetFileError(name, [Problem(None, reason)])])
        return importer.parse(self._release(given, importer, dataset))

    def _release(self, given: Release, importer: Importer, dataset) -> Release:
        """The inputs the format takes, read from the uploads."""
        data = self.cleaned_data
        if importer.takes is Takes.EXAMPLES:
            upload = data["files"][0]
            return replace(given, file=(upload.name.rsplit("/", 1)[-1], upload.read()))
        if importer.takes is Takes.SPLIT_FILES:
            if not data["topics"] and not Topic.objects.filter(split__dataset=dataset, split__name=data["split"]).exists():
                reason = (f"needed for a new split ({data['split']} has no topics yet); a new qrels version of an "
                          "existing split needs only the qrels")
                raise ImportRefused([DatasetFileError("topics", [Problem(None, reason)])])

            def pair(upload):
                return (upload.name.rsplit("/", 1)[-1], upload.read()) if upload else None

            return replace(given, topics=pair(data["topics"]), qrels=pair(data["qrels"]),
                           corpus_ids=pair(data.get("corpus_ids")))
        limit = settings.LEXBOARD_MAX_DECOMPRESSED_BYTES
        return replace(given, files=files_from_uploads(data["files"], max_bytes=limit))
