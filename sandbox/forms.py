"""The image form: the image (an archive, or a reference to the site's registry) and the few fields an entry needs
(the rest can be edited later)."""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.db import models

from submissions.models import Submission
from submissions.provenance import FIELD_HELP as METADATA_HELP, FIELD_LABELS as METADATA_LABELS

from .services import REGISTRY_OFF

#: The metadata an image takes (the rest can be edited on its entry once it ran).
IMAGE_FIELDS = ("system_name", "description", "code_url", "paper_url", "visibility", "training_data",
                "training_data_note", "models_used", "could_have_seen")


def _metadata_field(name: str, **kwargs) -> forms.Field:
    """The submission's own field as a form field, labelled and explained as on the upload form."""
    kwargs.setdefault("label", METADATA_LABELS.get(name))
    kwargs.setdefault("help_text", METADATA_HELP.get(name, ""))
    model_field = Submission._meta.get_field(name)
    assert isinstance(model_field, models.Field)
    field = model_field.formfield(**kwargs)
    assert field is not None
    return field


class ImageUploadForm(forms.Form):
    archive = forms.FileField(
        required=False, allow_empty_file=True, label="Image archive",
        help_text="What `podman save --format oci-archive -o image.tar IMAGE` (or `docker save`) writes.",
        widget=forms.ClearableFileInput(attrs={"accept": ".tar,application/x-tar"}),
    )
    reference = forms.CharField(
        required=False, max_length=400, label="Or an image in the site's registry",
        help_text="NAME:TAG or NAME@sha256:DIGEST, pushed to the site's registry first.",
    )
    system_name = forms.CharField(max_length=120, label="System name",
                                  help_text="A short name for the leaderboard.")
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}))
    code_url = forms.URLField(required=False, label="Code URL", assume_scheme="https")
    paper_url = forms.URLField(required=False, label="Paper URL", assume_scheme="https")
    visibility = forms.ChoiceField(choices=Submission.Visibility.choices, initial=Submission.Visibility.PRIVATE)
    # Provenance: the upload form's fields, with its words (a split may require it; the service says so).
    training_data = _metadata_field("training_data", required=False)
    training_data_note = _metadata_field("training_data_note", required=False,
                                         widget=forms.Textarea(attrs={"rows": 2}))
    models_used = _metadata_field("models_used", required=False,
                                  widget=forms.Textarea(attrs={"rows": 3, "spellcheck": "false"}))
    could_have_seen = _metadata_field("could_have_seen", required=False)

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        host = settings.LEXBOARD_SANDBOX_REGISTRY.strip()
        field = self.fields["reference"]
        if host:
            field.help_text = (f"NAME:TAG or NAME@sha256:DIGEST of an image you pushed to the site's registry: "
                               f"podman push IMAGE {host}/NAME:TAG. The platform pins its digest now.")
        else:
            field.disabled = True
            field.help_text = "This site has no image registry: upload an archive."

    def clean(self) -> dict:
        data = super().clean() or {}
        if self.fields["reference"].disabled and self.data.get(self.add_prefix("reference")):
            raise forms.ValidationError(REGISTRY_OFF)
        if data.get("archive") is None and not data.get("reference"):
            raise forms.ValidationError(
                "Give the image: an archive (what `podman save --format oci-archive` writes)"
                + (" or a reference to the site's registry (NAME:TAG)." if not self.fields["reference"].disabled
                   else "."))
        if data.get("archive") is not None and data.get("reference"):
            raise forms.ValidationError("Give the image either as an archive or as a reference, not both.")
        return data

    def metadata(self) -> dict:
        values = {name: self.cleaned_data.get(name) for name in IMAGE_FIELDS}
        # A choice not made is left to the model's default (unknown), not sent as "".
        return {name: value for name, value in values.items()
                if value is not None and not (value == "" and name in ("training_data", "could_have_seen"))}
