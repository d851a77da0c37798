"""The JSON parser of the scheduler API: JSON too deep to parse is bad input, not a crash."""

from __future__ import annotations

from collections.abc import Mapping
from typing import IO, Any

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser


class SchedulerJSONParser(JSONParser):
    """DRF's JSONParser, refusing JSON nested past Python's recursion limit with ParseError."""

    def parse(
        self, stream: IO[Any], media_type: str | None = None, parser_context: Mapping[str, Any] | None = None
    ) -> Any:
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            # json's scanner recurses once per level, so '[' * 1000 exhausts the stack.
            raise ParseError("JSON parse error - nested too deeply") from None
