"""Turn the pure IntEnums of the domain packages into Django field choices."""

from __future__ import annotations

from enum import Enum


def enum_choices(enum_cls: type[Enum]) -> list[tuple[object, str]]:
    """``[(value, "Label")]`` for a model field's ``choices``; labels keep BOINC's names."""
    return [(member.value, member.name.replace("_", " ").title()) for member in enum_cls]
