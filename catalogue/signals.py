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

#: Sent with ``split``, ``reason`` ("qrels": new judgments replace the current ones; "reveal": a shared task's
#: private board is published and the living board goes back to all topics) and ``note``, inside the event's
#: transaction and before the split's public board changes, so a receiver still reads the board that stops
#: being shown (the snapshots app keeps it: ``snapshots/receivers.py``).
board_changing = Signal()
