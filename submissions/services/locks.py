"""The row locks that serialise a participant's new submissions."""

from __future__ import annotations

from django.contrib.auth import get_user_model


def lock_uploader(user) -> None:
    """Serialise one participant's new submissions (inside the caller's transaction).

    ``FOR NO KEY UPDATE``: two uploads by the same user take turns, so both cannot
    pass the quota, but rows that merely refer to the user (a worker storing a
    result and its Ladder row) do not wait, so the upload (which then refers to
    the split) and a result store (which holds the split) never deadlock.
    """
    get_user_model().objects.select_for_update(no_key=True).filter(pk=user.pk).first()
