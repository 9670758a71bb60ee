"""The automatic snapshots: new judgments about to replace the current ones, a shared task's reveal."""

from __future__ import annotations

from django.dispatch import receiver

from catalogue.signals import board_changing

from .services import snapshot_on_event


@receiver(board_changing, dispatch_uid="snapshots.keep_the_board")
def keep_the_board(sender, *, split, reason: str, note: str = "", **kwargs) -> None:
    """Snapshot the board that is about to stop being shown (in the event's transaction, before the change)."""
    snapshot_on_event(split=split, reason=reason, note=note)
