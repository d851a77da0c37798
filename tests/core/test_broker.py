"""The embedded broker (boincproj.broker): a worker never takes a message before it is written."""

from __future__ import annotations

from pathlib import Path
from queue import Empty

import pytest
from kombu import Connection

from boincproj import broker
from boincproj.broker import Transport


@pytest.fixture
def connection(tmp_path: Path):
    folders = {name: tmp_path / name for name in ("out", "processed", "control")}
    for folder in folders.values():
        folder.mkdir()
    options = {
        "data_folder_in": str(folders["out"]),
        "data_folder_out": str(folders["out"]),
        "processed_folder": str(folders["processed"]),
        "control_folder": str(folders["control"]),
        "store_processed": False,
    }
    with Connection("filesystem://", transport=Transport, transport_options=options) as conn:
        yield conn


def test_a_message_goes_through(connection):
    queue = connection.SimpleQueue("work")
    queue.put({"task": "work.transition"})
    assert queue.get(timeout=1).payload == {"task": "work.transition"}
    queue.close()


def test_a_message_being_written_is_not_taken(connection, monkeypatch):
    channel = connection.default_channel
    seen = []

    def write_while_a_worker_polls(text: str) -> bytes:
        # The message's file is open for writing: a worker polling now must find nothing
        # (kombu's own transport hands it the empty file, and the worker dies on it).
        with pytest.raises(Empty):
            channel._get("work")
        seen.append(True)
        return text.encode()

    monkeypatch.setattr(broker, "str_to_bytes", write_while_a_worker_polls)
    channel._put("work", {"body": "x"})
    assert seen == [True]
    assert channel._get("work") == {"body": "x"}
