"""Handlers the tests name by dotted path, as a project would name its own."""

from __future__ import annotations

from apps.trickles.models import MsgFromHost, TrickleHandler
from apps.trickles.services import TrickleRefused

SEEN: list[int] = []


def record(message: MsgFromHost, config: TrickleHandler) -> None:
    SEEN.append(message.pk)


def broken(message: MsgFromHost, config: TrickleHandler) -> None:
    raise RuntimeError("database of the project's science is down")


def refusing(message: MsgFromHost, config: TrickleHandler) -> None:
    raise TrickleRefused("not for this handler")
