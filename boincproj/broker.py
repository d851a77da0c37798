"""The embedded Celery broker (``make run``): kombu's filesystem transport, with each message
written whole before a worker can see it.

kombu's own ``_put`` creates the message file under its final name and then writes it, and
``_get`` takes any file with a matching name without waiting for the writer's lock. A worker
polling at that moment reads an empty message and stops with a JSONDecodeError (seen when
beat sends its first ticks as the worker starts). Here the message is written under a name
no queue matches and then renamed into place, which is atomic on one filesystem.
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


class Channel(filesystem.Channel):
    def _put(self, queue: str, payload: Any, **kwargs: Any) -> None:  # type: ignore[override]  # as kombu's own
        # kombu's own name: _get takes messages in name order (the time first) and by the
        # part after the first dot; the partial name has another part there.
        name = f"{round(monotonic() * 1000)}_{uuid.uuid4()}.{queue}.msg"
        final = os.path.join(self.data_folder_out, name)
        partial = os.path.join(self.data_folder_out, f"{name}.writing")
        try:
            with open(partial, "wb") as f:
                f.write(str_to_bytes(dumps(payload)))
            os.replace(partial, final)
        except OSError as exc:
            raise ChannelError(f"Cannot add file {final!r} to directory") from exc


class Transport(filesystem.Transport):
    Channel = Channel
