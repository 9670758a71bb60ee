"""A dataset's data terms: the page that shows them and takes a participant's acceptance, and its old versions.

The rule itself (who must accept what before a download or an upload) is :mod:`accounts.terms`; the dataset's
file downloads (``views.dataset_file``) and the upload form send a participant here with ``?next=`` the place
they were going, and the acceptance sends them back.
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme

from accounts.models import ApiToken
from accounts.terms import TermsChanged, TermsPending, terms_accept, terms_accepted, terms_pending
from campaigns.selectors import team_acting_on
from catalogue.models import DataTerms
from catalogue.selectors import DatasetNotFound, data_terms_in_force, dataset_for_page


def _safe_next(request: HttpRequest, default: str) -> str:
    """Where to go after accepting: a path of this site only (never another host's address)."""
    target = request.POST.get("next") or request.GET.get("next") or ""
    if target and url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()},
                                                  require_https=request.is_secure()):
        return target
    return default


def terms_gate(request: HttpRequest, dataset) -> HttpResponse | None:
    """Before a dataset's file: a redirect to log in or to the terms when they are not accepted yet (back to this
    request's address afterwards); None when the request may go on.

    A script sends its API token instead (``Authorization: Token …``, as the API takes it): refused with a
    403 that says which terms and where to accept them, since a script follows no page."""
    if data_terms_in_force(dataset_id=dataset.pk) is None:
        return None
    header = request.META.get("HTTP_AUTHORIZATION", "")
    if not request.user.is_authenticated and header.startswith("Token "):
        token = ApiToken.authenticate(header.removeprefix("Token ").strip())
        if token is None:
            return HttpResponse("The API token sent is not valid: create one on your profile page.\n",
                                status=401, content_type="text/plain; charset=utf-8")
        pending = terms_pending(user=token.user, dataset=dataset)
        return None if pending is None else HttpResponse(
            f"{pending.message}\n", status=403, content_type="text/plain; charset=utf-8")
    if not request.user.is_authenticated:
        messages.info(request, f"{dataset.name}'s files are shared under terms you accept once: log in first.")
        return redirect_to_login(request.get_full_path())
    pending = terms_pending(user=request.user, dataset=dataset)
    if pending is None:
        return None
    return HttpResponseRedirect(terms_address(pending, next_url=request.get_full_path()))


def terms_address(pending: TermsPending, *, next_url: str) -> str:
    return f"{pending.page}?{urlencode({'next': next_url})}"


def data_terms(request: HttpRequest, slug: str) -> HttpResponse:
    """The terms in force, with "I accept version N" for a logged-in participant who has not accepted them."""
    try:
        dataset = dataset_for_page(slug, user=request.user)
    except DatasetNotFound as exc:
        raise Http404(str(exc)) from exc
    terms = data_terms_in_force(dataset_id=dataset.pk)
    if terms is None:
        raise Http404(f"{dataset.name} has no data terms: its files are offered without them.")
    back = _safe_next(request, dataset.get_absolute_url())
    if request.method == "POST":
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        try:
            version = int(request.POST.get("version", ""))
        except ValueError:
            version = 0
        team = team_acting_on(user=request.user, dataset_id=dataset.pk)
        try:
            terms_accept(user=request.user, dataset=dataset, version=version, team=team.name if team else "")
        except TermsChanged as exc:
            messages.error(request, exc.message)
            return redirect(f"{request.path}?{urlencode({'next': back})}")
        messages.success(request, f"You accepted version {terms.version} of {dataset.name}'s data terms.")
        return redirect(back)
    accepted = terms_accepted(user=request.user, terms=terms) if request.user.is_authenticated else False
    pending = terms_pending(user=request.user, dataset=dataset) if request.user.is_authenticated else None
    older = list(DataTerms.objects.filter(dataset=dataset, version__lt=terms.version).order_by("-version")
                 .values("version", "title", "created_at"))
    return render(request, "leaderboard/data_terms.html", {
        "dataset": dataset, "terms": terms, "accepted": accepted, "next": back,
        "accepted_before": pending.accepted_before if pending is not None else None,
        "older": older, "in_force": True,
        "login_url": f"{reverse('account_login')}?{urlencode({'next': request.get_full_path()})}",
    })


def data_terms_version(request: HttpRequest, slug: str, version: int) -> HttpResponse:
    """One version of the terms as it was accepted, kept readable after newer ones (a legal record)."""
    try:
        dataset = dataset_for_page(slug, user=request.user)
    except DatasetNotFound as exc:
        raise Http404(str(exc)) from exc
    terms = DataTerms.objects.filter(dataset=dataset, version=version).first()
    if terms is None:
        raise Http404(f"{dataset.name} has no version {version} of its data terms.")
    current = data_terms_in_force(dataset_id=dataset.pk)
    return render(request, "leaderboard/data_terms.html", {
        "dataset": dataset, "terms": terms, "in_force": current is not None and current.pk == terms.pk,
        "current": current, "accepted": False, "older": [], "next": dataset.get_absolute_url(),
    })
