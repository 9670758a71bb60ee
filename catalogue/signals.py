"""Signals the dataset catalogue sends to the layers above it (which it may not import).

``qrels_published`` is sent, inside the publishing transaction, whenever a
split's judgments version becomes current without the submissions side
doing it (a split's first version, from every importer and the demo). The
submissions side listens (``submissions/receivers.py``) and scores the runs
that were waiting for judgments, so no path of publication forgets them.
"""

from __future__ import annotations

from django.dispatch import Signal

#: Sent with ``split`` and ``version`` when ``version`` became the split's current judgments.
qrels_published = Signal()
