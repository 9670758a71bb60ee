"""Forms of the account pages: the sign-up's extra fields, the profile, API tokens, participation requests.

allauth imports this module while it builds its sign-up form (``ACCOUNT_SIGNUP_FORM_CLASS``), so nothing
here may import ``allauth.account.forms``; forms derived from allauth's are in ``accounts/login_form.py``.
"""

from __future__ import annotations

from django import forms

from .models import ApiToken, Profile


class SignupExtraForm(forms.Form):
    """What allauth's sign-up form asks besides username, e-mail and password: how the leaderboard names you."""

    display_name = forms.CharField(
        max_length=100, required=False, help_text="Shown on the leaderboard next to your public entries."
    )
    affiliation = forms.CharField(max_length=200, required=False, help_text="University, lab or company.")

    def signup(self, request, user) -> None:
        """Called by allauth once the user is saved: a user never goes without a profile."""
        Profile.objects.update_or_create(
            user=user,
            defaults={
                "display_name": self.cleaned_data.get("display_name", "").strip(),
                "affiliation": self.cleaned_data.get("affiliation", "").strip(),
            },
        )


class ProfileForm(forms.ModelForm):
    class Meta:
        model = Profile
        fields = ("display_name", "affiliation")
        help_texts = {
            "display_name": "Shown on the leaderboard next to your public entries (your username otherwise).",
            "affiliation": "University, lab or company.",
        }


class TokenCreateForm(forms.Form):
    name = forms.CharField(
        max_length=100,
        initial="token",
        help_text="A name to remember where the token is used, e.g. 'laptop' or 'CI'.",
    )

    def save(self, *, user) -> tuple[ApiToken, str]:
        return ApiToken.issue(user=user, name=self.cleaned_data["name"].strip() or "token")


class ParticipationRequestForm(forms.Form):
    message = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 4}),
        max_length=2000,
        required=False,
        label="About you and your system",
        help_text="Who you are and what you will submit; the curators read it.",
    )
