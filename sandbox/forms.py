"""The image upload form: the archive and the few fields an entry needs (the rest can be edited later)."""

from __future__ import annotations

from django import forms

from submissions.models import Submission


class ImageUploadForm(forms.Form):
    archive = forms.FileField(
        allow_empty_file=True, label="Image archive",
        help_text="What `podman save --format oci-archive -o image.tar IMAGE` (or `docker save`) writes.",
        widget=forms.ClearableFileInput(attrs={"accept": ".tar,application/x-tar"}),
    )
    system_name = forms.CharField(max_length=120, label="System name",
                                  help_text="A short name for the leaderboard.")
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}))
    code_url = forms.URLField(required=False, label="Code URL", assume_scheme="https")
    paper_url = forms.URLField(required=False, label="Paper URL", assume_scheme="https")
    visibility = forms.ChoiceField(choices=Submission.Visibility.choices, initial=Submission.Visibility.PRIVATE)

    def metadata(self) -> dict:
        return {name: self.cleaned_data[name] for name in ("system_name", "description", "code_url", "paper_url",
                                                           "visibility") if self.cleaned_data.get(name) not in (None,)}
