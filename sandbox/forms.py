"""The image form: the image (an archive, or a reference to the site's registry) and the few fields an entry needs
(the rest can be edited later)."""

from __future__ import annotations

from django import forms
from django.conf import settings

from submissions.models import Submission

from .services import REGISTRY_OFF


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
        return {name: self.cleaned_data[name] for name in ("system_name", "description", "code_url", "paper_url",
                                                           "visibility") if self.cleaned_data.get(name) not in (None,)}
