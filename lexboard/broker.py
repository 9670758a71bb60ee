"""kombu's ``filesystem://`` transport, with each message file put in place whole.

The stock transport (kombu 5.x) opens ``<time>_<uuid>.<queue>.msg`` in the
queue's folder and then writes the message into it. A worker that lists the
folder meanwhile takes the file (it moves it away, without the writer's lock)
while it is still empty or half written, and ``json.loads`` of that kills the
worker's consumer (``JSONDecodeError``; tests/ops/test_broker_race.py shows it
with many messages sent at once). Here the message is written under a name no
reader looks at (no ``.<queue>.msg`` suffix) and ``os.replace``d into place:
a rename in one folder is atomic, so a reader sees the whole file or none.

``lexboard/celery.py`` registers it under kombu's own alias, ``filesystem``, so
``filesystem://`` (the embedded default, ``make run``, ``make test-fast``)
means this transport whether the URL comes from the settings or from the
``CELERY_BROKER_URL`` variable (which Celery prefers to them).
"""

from __future__ import annotations

import os
import uuid
from time import monotonic
from typing import Any

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.encoding import str_to_bytes
from kombu.utils.json import dumps

#: What kombu's ``filesystem`` alias names in a process that imported ``lexboard``.
TRANSPORT = "lexboard.broker:Transport"


class Channel(filesystem.Channel):
    """The stock channel, but a message file appears in the queue's folder only once it is complete."""

    # The stubs disagree with themselves: kombu.transport.filesystem.Channel says payload, AbstractChannel message.
    def _put(self, queue: str, payload: dict[str, Any], **kwargs: Any) -> None:  # type: ignore[override]
        name = f"{int(monotonic() * 1000)}_{uuid.uuid4()}.{queue}.msg"
        final = os.path.join(self.data_folder_out, name)
        # A leading dot and no ".msg" ending: _get, _size and _purge match "<anything>.<queue>.msg" only.
        partial = os.path.join(self.data_folder_out, f".partial-{uuid.uuid4().hex}")
        try:
            with open(partial, "wb") as f:
                f.write(str_to_bytes(dumps(payload)))
            os.replace(partial, final)
        except OSError as exc:
            try:
                os.remove(partial)
            except OSError:
                pass
            raise ChannelError(f"Cannot add file {final!r} to directory") from exc


class Transport(filesystem.Transport):
    """kombu's filesystem transport with :class:`Channel`."""

    Channel = Channel

    @property
    def default_connection_params(self) -> dict[str, Any]:
        """No host: the folders are the broker (kombu's virtual transports default to 'localhost', and every
        connection made from ``filesystem://`` then logged "No hostname was supplied" as a warning)."""
        return {"port": self.default_port}
