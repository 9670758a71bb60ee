"""Forms of the participant's pages: upload, edit metadata, resubmit a corrected file.

The forms only validate what a person typed; the file checks live in
``services.upload_inspect`` so the browser and the API refuse the same files
with the same words.
"""

from __future__ import annotations

from django import forms
from django.db import models

from submissions import provenance
from submissions.models import Submission
from submissions.provenance import CouldHaveSeen, TrainingData
from submissions.services import METADATA_FIELDS

METADATA_HELP = {
    "system_name": "A short name for the leaderboard, e.g. “BM25 (k1=1.2, b=0.75)”.",
    "description": "What the system does, in a few sentences.",
    "paper_url": "A paper or preprint describing the system, if any.",
    "code_url": "Where others can find the code, if public.",
    "params": "Number of parameters, e.g. 110M or 7B.",
    "latency_ms": "Average time per query, in milliseconds.",
    "llm_calls_per_query": "Average number of LLM calls per query.",
    "llm_tokens_per_query": "Average LLM tokens (prompt + completion) per query.",
    "hardware": "e.g. 1× A100 80GB, or CPU only.",
    **provenance.FIELD_HELP,
    "visibility": "Does this entry go on the public leaderboard? Private (the default) entries are seen only by "
    "you — use it for sanity checks; anonymous ones are public without your name. You can change this later.",
}


#: Labels where Django's default from the field name reads wrong ("Paper url", "Llm calls per query").
METADATA_LABELS = {
    "paper_url": "Paper URL",
    "code_url": "Code URL",
    "llm_calls_per_query": "LLM calls per query",
    "llm_tokens_per_query": "LLM tokens per query",
    "visibility": "On the public leaderboard?",
    **provenance.FIELD_LABELS,
}


def _formfield(model_field, **kwargs):
    """Model fields as form fields; URLs assume https when a scheme is missing."""
    if isinstance(model_field, models.URLField):
        kwargs.setdefault("assume_scheme", "https")
    return model_field.formfield(**kwargs)


class SubmissionMetadataForm(forms.ModelForm):
    """What a participant tells about the system (editable after upload)."""

    class Meta:
        model = Submission
        fields = list(METADATA_FIELDS)
        help_texts = METADATA_HELP
        labels = METADATA_LABELS
        formfield_callback = _formfield
        widgets = {
            "description": forms.Textarea(attrs={"rows": 4}),
            "training_data_note": forms.Textarea(attrs={"rows": 2}),
            "models_used": forms.Textarea(attrs={"rows": 3, "spellcheck": "false"}),
            "visibility": forms.RadioSelect,
        }


    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # Not stated is a value of its own (``unknown``, the default): a form without these fields is not refused
        # for them (a split that requires them says so, naming each).
        for name in ("training_data", "could_have_seen"):
            self.fields[name].required = False

    def clean_training_data(self) -> str:
        return self.cleaned_data.get("training_data") or TrainingData.UNKNOWN

    def clean_could_have_seen(self) -> str:
        return self.cleaned_data.get("could_have_seen") or CouldHaveSeen.UNKNOWN


class UploadForm(SubmissionMetadataForm):
    """The upload page: a run file (plain or .gz) plus the metadata."""

    # Empty files reach the service, whose refusal says what to do.
    run = forms.FileField(
        allow_empty_file=True,
        label="Run file",
        help_text="TREC format, plain text or gzip (.gz).",
        widget=forms.ClearableFileInput(attrs={"accept": ".txt,.trec,.run,.jsonl,.json,.gz,text/plain,application/gzip"}),
    )

    field_order = ["run", *METADATA_FIELDS]

    def metadata(self) -> dict:
        return {name: self.cleaned_data[name] for name in METADATA_FIELDS if name in self.cleaned_data}


class ResubmitForm(forms.Form):
    """A corrected file for a submission; the metadata is copied from it."""

    run = forms.FileField(
        allow_empty_file=True, label="Corrected run file", help_text="Plain text or gzip (.gz)."
    )


class VisibilityForm(forms.Form):
    visibility = forms.ChoiceField(choices=Submission.Visibility.choices)
