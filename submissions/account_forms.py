"""Forms of the account pages: sign-up, profile, API token creation."""

from __future__ import annotations

from django import forms
from django.contrib.auth import get_user_model
from django.contrib.auth.forms import AuthenticationForm, UserCreationForm
from django.db import transaction

from .models import ApiToken, Profile


class SignUpForm(UserCreationForm):
    """Username, e-mail and password (Django's validators), plus how the leaderboard names the person."""

    email = forms.EmailField(
        label="E-mail", help_text="For password resets. Never shown on the site.", max_length=254
    )
    display_name = forms.CharField(
        max_length=100, required=False, help_text="Shown on the leaderboard next to your public entries."
    )
    affiliation = forms.CharField(max_length=200, required=False, help_text="University, lab or company.")

    class Meta(UserCreationForm.Meta):
        model = get_user_model()
        fields = ("username", "email")

    def clean_email(self) -> str:
        email = self.cleaned_data["email"].strip()
        if get_user_model().objects.filter(email__iexact=email).exists():
            raise forms.ValidationError(
                "An account with this e-mail address exists already. Log in, or reset its password."
            )
        return email

    @transaction.atomic
    def save(self, commit: bool = True):
        """Create the user and its profile together: a user without a profile is never stored."""
        user = super().save(commit=False)
        user.email = self.cleaned_data["email"]
        user.save()
        Profile.objects.create(
            user=user,
            display_name=self.cleaned_data.get("display_name", "").strip(),
            affiliation=self.cleaned_data.get("affiliation", "").strip(),
        )
        return user


class LoginForm(AuthenticationForm):
    """Django's log-in form; the view adds throttling of failed attempts."""


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
