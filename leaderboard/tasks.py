"""Celery tasks of the boards: the shared tasks' reveal (beat). Task names are the wire format: never rename them."""

from __future__ import annotations

from celery import shared_task

from .private_board import reveal_closed_phases

REVEAL_TASK = "leaderboard.reveal_closed_phases"


@shared_task(name=REVEAL_TASK, ignore_result=True)
def reveal_due_phases() -> list[str]:
    """Publish the private board of every phase that closed (idempotent: a revealed phase is left as it is)."""
    return reveal_closed_phases()
