"""Account pages: sign-up, log-in (throttled), log-out, password reset, profile and API tokens.

Log-in, log-out and the password-reset flow are Django's own views with our
templates; this module adds the throttling of failed log-ins, the sign-up
that creates the profile, and the token management of the profile page.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse, reverse_lazy
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from .account_forms import LoginForm, ProfileForm, SignUpForm, TokenCreateForm
from .models import ApiToken, Profile
from .throttling import RateLimiter, format_wait, login_ident, login_limiter


def _safe_next(request) -> str | None:
    target = request.POST.get("next") or request.GET.get("next")
    if target and url_has_allowed_host_and_scheme(target, {request.get_host()}, request.is_secure()):
        return target
    return None


@never_cache
def signup(request):
    """Create an account (user and profile) and log the new user in."""
    if request.user.is_authenticated:
        return redirect("accounts:profile")
    if request.method == "POST":
        form = SignUpForm(request.POST)
        if form.is_valid():
            user = form.save()
            login(request, user, backend=settings.AUTHENTICATION_BACKENDS[0])
            messages.success(request, f"Welcome, {user.get_username()}: your account is ready.")
            return redirect(_safe_next(request) or reverse("accounts:profile"))
    else:
        form = SignUpForm()
    return render(request, "registration/signup.html", {"form": form, "next": _safe_next(request) or ""})


class ThrottledLoginView(auth_views.LoginView):
    """Django's log-in view, refusing further attempts after too many failures.

    Failures are counted per (client address, username) by
    :class:`~submissions.throttling.ThrottledModelBackend`; once
    ``settings.LEXBOARD_LOGIN_RATE`` is reached, this form answers 429 with
    the time to wait, without even checking the password, so guessing stops
    paying off.
    """

    template_name = "registration/login.html"
    authentication_form = LoginForm
    redirect_authenticated_user = True
    next_page = reverse_lazy("leaderboard:home")

    def post(self, request, *args, **kwargs):
        ident = login_ident(request, request.POST.get("username", ""))
        verdict = login_limiter().peek(ident)
        if not verdict.allowed:
            form = self.get_form_class()(request, initial={"username": request.POST.get("username", "")})
            context = self.get_context_data(
                form=form,
                throttled_message=(
                    f"Too many failed log-in attempts for this username. "
                    f"Try again in {format_wait(verdict.retry_after)}, or reset your password."
                ),
            )
            response = self.render_to_response(context, status=429)
            response["Retry-After"] = str(verdict.retry_after)
            return response
        return super().post(request, *args, **kwargs)


class LogoutView(auth_views.LogoutView):
    """Log out (POST only, as Django requires: a link could log anyone out)."""

    next_page = reverse_lazy("leaderboard:home")


class PasswordResetView(auth_views.PasswordResetView):
    """Django's reset view; past the log-in rate, per address and e-mail, it quietly sends nothing.

    The answer stays the same either way ("check your e-mail"), so the page
    neither reveals which addresses have accounts nor lets anyone flood an
    inbox.
    """

    template_name = "registration/password_reset_form.html"
    email_template_name = "registration/password_reset_email.txt"
    html_email_template_name = "registration/password_reset_email.html"
    subject_template_name = "registration/password_reset_subject.txt"
    success_url = reverse_lazy("accounts:password_reset_done")

    def form_valid(self, form):
        ident = login_ident(self.request, form.cleaned_data.get("email", ""))
        if not RateLimiter("password_reset", "LEXBOARD_LOGIN_RATE").hit(ident).allowed:
            return redirect(self.get_success_url())
        return super().form_valid(form)


class PasswordResetConfirmView(auth_views.PasswordResetConfirmView):
    template_name = "registration/password_reset_confirm.html"
    success_url = reverse_lazy("accounts:password_reset_complete")


class PasswordChangeView(auth_views.PasswordChangeView):
    template_name = "registration/password_change_form.html"
    success_url = reverse_lazy("accounts:password_change_done")


def _profile_of(user) -> Profile:
    # Users made by createsuperuser or the admin have no profile yet.
    profile, _ = Profile.objects.get_or_create(user=user)
    return profile


def _render_profile(request, *, form=None, token_form=None, new_key: str = "", new_token=None, status: int = 200):
    profile = _profile_of(request.user)
    tokens = ApiToken.objects.filter(user=request.user, revoked_at__isnull=True).order_by("-created_at")
    response = render(
        request,
        "accounts/profile.html",
        {
            "profile": profile,
            "form": form or ProfileForm(instance=profile),
            "token_form": token_form or TokenCreateForm(),
            "tokens": tokens,
            "new_key": new_key,
            "new_token": new_token,
            "api_docs_url": reverse("api:docs"),
        },
        status=status,
    )
    # The page may show a fresh key: no cache may keep a copy.
    response["Cache-Control"] = "no-store"
    return response


@login_required
def profile(request):
    """Edit the display name and affiliation; list, create and revoke API tokens."""
    if request.method == "POST":
        form = ProfileForm(request.POST, instance=_profile_of(request.user))
        if form.is_valid():
            form.save()
            messages.success(request, "Profile saved.")
            return redirect("accounts:profile")
        return _render_profile(request, form=form, status=400)
    return _render_profile(request)


@login_required
@require_POST
def token_create(request):
    """Create a token and show its key in this response only (only its hash is stored)."""
    token_form = TokenCreateForm(request.POST)
    if not token_form.is_valid():
        return _render_profile(request, token_form=token_form, status=400)
    token, key = token_form.save(user=request.user)
    return _render_profile(request, new_key=key, new_token=token)


@login_required
@require_POST
def token_revoke(request, token_id: int):
    """Revoke one of the user's own tokens; another user's token id is simply not found."""
    token = get_object_or_404(ApiToken, pk=token_id, user=request.user, revoked_at__isnull=True)
    ApiToken.objects.filter(pk=token.pk).update(revoked_at=timezone.now())
    messages.success(request, f"Token “{token.name}” ({token.prefix}…) revoked: scripts using it are now refused.")
    return redirect("accounts:profile")
