"""The file-name rules shared by uploads, reply file_infos, templates and the file deleter."""

from __future__ import annotations

import re

from apps.core.domain.signing import md5_hex

MAX_FILE_NAME_BYTES = 255
_FORBIDDEN_CHAR = re.compile(r"[%/\\\x00-\x1f\x7f]")


def is_safe_file_name(name: str) -> bool:
    """True if ``name`` may be used as a file name in a project's upload/download dirs.

    The BOINC client refuses names containing ``..`` or ``%``; the stock upload handler
    refuses those and any ``/``. Cobblestone also refuses: the empty name, ``.``,
    backslashes, control characters (and DEL), and names over 255 UTF-8 bytes.
    Names are never decoded: ``%2e%2e`` is refused for its ``%``, not for what it means.
    """
    if not name or name == "." or ".." in name:
        return False
    if _FORBIDDEN_CHAR.search(name):
        return False
    return len(name.encode("utf-8", "surrogatepass")) <= MAX_FILE_NAME_BYTES


def partial_upload_name(name: str) -> str:
    """Where an incomplete upload of ``name`` grows: ``.NAME.part`` beside the final file.

    Final names never start with '.', so this cannot collide with one, and readers that
    look up the final name never see a partial file. A name too long for the suffix uses
    its MD5 instead.
    """
    hidden = f".{name}.part"
    if len(hidden.encode("utf-8", "surrogatepass")) > MAX_FILE_NAME_BYTES:
        hidden = f".{md5_hex(name)}.part"
    return hidden
