"""The single exception of the protocol package."""

from __future__ import annotations


class ProtocolError(Exception):
    """Input the protocol layer refuses, or a value it cannot put on the wire.

    Every parser in ``apps.protocol`` raises only this for bad input (malformed XML, a
    DOCTYPE, a body over its size bound, a number out of its sane range, ...), so a view
    can answer any refusal with one ``except ProtocolError``.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
