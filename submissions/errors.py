"""Domain exceptions of the submissions side, each carrying a message for a person.

Views turn them into a form error, the API into ``{"error": {"message",
"details"}}``; neither needs to know what went wrong, only how to say it.
"""

from __future__ import annotations

from datetime import datetime

from accounts.terms import TermsPending


class UploadRefused(Exception):
    """A file or a request refused before anything was written.

    ``details`` is a list of ``{"line": int | None, "reason": str}`` so a person
    can go straight to the line to fix. ``retry_at`` is set when the refusal is
    a quota and says when the next submission will be accepted.
    """

    def __init__(self, message: str, details: list[dict] | None = None, *, retry_at: datetime | None = None):
        super().__init__(message)
        self.message = message
        self.details = list(details or [])
        self.retry_at = retry_at

    def to_dict(self) -> dict:
        """The API's error body (``{"message", "details"}``)."""
        body = {"message": self.message, "details": self.details}
        if self.retry_at is not None:
            body["retry_at"] = self.retry_at.isoformat()
        return body


class QuotaExceeded(UploadRefused):
    """The user reached the split's daily or total submission limit."""


class SplitClosed(UploadRefused):
    """The split takes no runs now (closed by a curator, or its judgments not published yet): a state, not a bad file."""


class SlotSpent(UploadRefused):
    """A presigned upload slot that can make no submission now: it made one already, its file was refused, it
    expired, or another request is completing it (``submissions/services/presigned.py``)."""


class AccountRefused(UploadRefused):
    """The split's account policy (verified e-mail, curator approval) does not let this account upload yet."""


class TermsRequired(AccountRefused):
    """The dataset's terms in force are not accepted by this account yet (``pending`` says which, and where)."""

    def __init__(self, pending: TermsPending):
        super().__init__(pending.message, [{"line": None, "reason": (
            f"terms: version {pending.terms.version} of {pending.dataset.slug}'s data terms not accepted")}])
        self.pending = pending


class ActionRefused(Exception):
    """An action on an existing submission that its state does not allow (e.g. withdrawing twice)."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message
