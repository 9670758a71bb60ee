"""Data terms: whether an account has accepted the terms in force on a dataset, and recording that it has.

The one rule every door asks (the dataset's file downloads, the upload form, the API, the client, fusion,
container images): before a participant downloads a dataset's files or uploads to it, their account has
accepted the version of the dataset's terms in force (``catalogue.models.DataTerms``), once; a new version asks
again. Curators (staff) are not asked: they publish the data. Refusals come before anything is read or stored.

Each account accepts for itself; when it acts for a shared task's team, the team's name is recorded with the
acceptance (the caller above the shared tasks finds it and passes it down).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC

from django.db import IntegrityError, transaction
from django.urls import reverse

from catalogue.models import Dataset, DataTerms
from catalogue.selectors import data_terms_in_force
from evaluation.csv_cells import csv_rows

from .models import TermsAcceptance


@dataclass(frozen=True)
class TermsPending:
    """The terms in force on a dataset that an account has not accepted yet."""

    dataset: Dataset
    terms: DataTerms
    accepted_before: int | None  # the newest older version the account accepted, if any

    @property
    def page(self) -> str:
        """The page that shows the text and takes the acceptance."""
        return reverse("leaderboard:data_terms", args=[self.dataset.slug])

    @property
    def api_accept(self) -> str:
        return reverse("api:dataset_terms_accept", args=[self.dataset.slug])

    @property
    def summary(self) -> str:
        """Which terms and which version, and whether they changed since the account accepted older ones."""
        changed = (f" They changed since you accepted version {self.accepted_before}."
                   if self.accepted_before is not None else "")
        return (f"{self.dataset.name} is shared under terms (\u201c{self.terms.title}\u201d, version "
                f"{self.terms.version}) that you accept once before you download its files or upload to it."
                f"{changed}")

    @property
    def message(self) -> str:
        """For a person: which terms, which version, where to accept them."""
        return f"{self.summary} Read and accept them at {self.page} (the client: add --accept-terms)."

    def as_dict(self, build_uri=None) -> dict:
        """What the API says about it, beside the message (addresses absolute when ``build_uri`` is given)."""
        absolute = build_uri or (lambda path: path)
        return {"dataset": self.dataset.slug, "version": self.terms.version, "title": self.terms.title,
                "url": absolute(self.page), "accept": absolute(self.api_accept)}


def terms_accepted(*, user, terms: DataTerms) -> bool:
    """Whether ``user`` accepted this version (staff are never asked)."""
    if user is not None and user.is_authenticated and user.is_staff:
        return True
    return bool(user is not None and user.is_authenticated
                and TermsAcceptance.objects.filter(user=user, terms=terms).exists())


def terms_pending(*, user, dataset: Dataset) -> TermsPending | None:
    """The dataset's terms in force when ``user`` (an account: call it after asking to log in) has not accepted
    them; None when there are none, the user accepted them, or the user is staff."""
    terms = data_terms_in_force(dataset_id=dataset.pk)
    if terms is None or terms_accepted(user=user, terms=terms):
        return None
    before = None
    if user is not None and user.is_authenticated:
        before = (TermsAcceptance.objects.filter(user=user, dataset_id=dataset.pk).order_by("-version")
                  .values_list("version", flat=True).first())
    terms.dataset = dataset
    return TermsPending(dataset=dataset, terms=terms, accepted_before=before)


class TermsChanged(Exception):
    """The version a person accepted is no longer the one in force (a curator published another meanwhile)."""

    def __init__(self, *, accepted: int, terms: DataTerms):
        super().__init__(f"You accepted version {accepted} of the terms, but version {terms.version} is in force "
                         "now: read it and accept that one.")
        self.message = str(self)
        self.terms = terms


def terms_accept(*, user, dataset: Dataset, version: int, team: str = "") -> TermsAcceptance:
    """Record that ``user`` accepts version ``version`` of ``dataset``'s terms (once: a second call returns the
    first record). Refused with :class:`TermsChanged` when that version is not the one in force, so that
    nobody accepts a text other than the one they read."""
    terms = data_terms_in_force(dataset_id=dataset.pk)
    if terms is None:
        raise LookupError(f"{dataset.name} has no terms to accept.")
    if terms.version != version:
        raise TermsChanged(accepted=version, terms=terms)
    found = TermsAcceptance.objects.filter(user=user, terms=terms).first()
    if found is not None:
        return found
    email = (user.email or "").strip()
    try:
        with transaction.atomic():
            return TermsAcceptance.objects.create(
                user=user, terms=terms, dataset=dataset, version=terms.version, username=user.get_username(),
                email=email, team=team[:200])
    except IntegrityError:  # the same person's second click, at the same moment
        return TermsAcceptance.objects.get(user=user, terms=terms)


#: The columns of the curators' export, in order.
CSV_COLUMNS = ("dataset", "version", "title", "account", "email", "team", "accepted_at_utc")


def acceptances_csv(queryset) -> str:
    """The acceptances as CSV for curators: dataset, version, the terms' title, account, e-mail, team, date (UTC).

    Through the site's one CSV writer (every cell quoted, a formula in a typed team name neutralised).
    """
    rows = queryset.select_related("dataset", "terms").order_by("dataset__slug", "version", "accepted_at", "pk")
    return csv_rows([CSV_COLUMNS, *(
        [row.dataset.slug, row.version, row.terms.title, row.username, row.email, row.team,
         row.accepted_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")] for row in rows)])
