"""Turn the pure IntEnums of the domain packages into Django field choices."""

from __future__ import annotations

from enum import Enum

# BOINC's names drop the apostrophe (COULDNT_SEND, DIDNT_NEED); the labels put it back.
_CONTRACTIONS = {"Couldnt": "Couldn't", "Didnt": "Didn't"}


def enum_choices(enum_cls: type[Enum]) -> list[tuple[object, str]]:
    """``[(value, "Label")]`` for a model field's ``choices``; labels keep BOINC's names."""
    return [(member.value, enum_label(member.name)) for member in enum_cls]


def enum_label(name: str) -> str:
    """COULDNT_SEND as "Couldn't Send", IN_PROGRESS as "In Progress"."""
    return " ".join(_CONTRACTIONS.get(word, word) for word in name.replace("_", " ").title().split())
