"""The one exception of the assessment side: a refusal with a message a curator or an assessor can act on."""

from __future__ import annotations


class AssessmentError(Exception):
    """A request the assessment services refuse; ``str()`` says why and what to do instead."""
