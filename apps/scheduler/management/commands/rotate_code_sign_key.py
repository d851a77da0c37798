"""Code-signing key rotation: a new key pair, vouched for by the old key.

The client accepts a new ``<code_sign_key>`` only with a ``<code_sign_key_signature>``
made with the key it already holds; the scheduler sends both to every
client whose request carries another key. A client that skipped a rotation (two keys
behind) cannot follow, as in BOINC; it must be reset. App files are signed again with the
new key, since clients check every app file against the key they hold.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from apps.applications.models import AppFile
from apps.core.domain.signing import (
    KeyFormatError,
    generate_key_pair,
    public_text_from_private,
    sign_key_rotation,
    sign_md5_hex,
)
from apps.core.private_files import private_write
from apps.projects.models import Project


class KeyRotationError(ValueError):
    """A clear reason why the key could not be rotated; nothing was changed."""


@dataclass(frozen=True, slots=True)
class KeyRotation:
    public_text: str
    private_text: str
    signature: str
    kept_on_server: bool
    resigned_files: int


def code_sign_key_rotate(
    *, project_id: int, old_private_text: str = "", keep_private_key: bool | None = None
) -> KeyRotation:
    """Generate a new pair, store its public key and rotation signature, re-sign app files.

    ``old_private_text`` is needed only when the server does not keep the private key.
    ``keep_private_key`` defaults to keeping it exactly when the server kept the old one.
    """
    with transaction.atomic():
        project = Project.objects.select_for_update().get(pk=project_id)
        old_private = old_private_text.strip() or project.code_sign_private_key
        if not old_private:
            raise KeyRotationError(
                "the server does not keep the code-signing private key: give the current one "
                "(--old_private_key FILE) so it can sign the new key"
            )
        try:
            matches = public_text_from_private(old_private).strip() == project.code_sign_public_key.strip()
        except KeyFormatError as exc:
            raise KeyRotationError(f"the old private key cannot be read: {exc}") from exc
        if not matches:
            raise KeyRotationError("the old private key does not match the project's current public key")
        keep = bool(project.code_sign_private_key) if keep_private_key is None else keep_private_key
        pair = generate_key_pair()
        project.code_sign_public_key = pair.public_text
        project.code_sign_key_signature = sign_key_rotation(old_private, pair.public_text)
        project.code_sign_private_key = pair.private_text if keep else ""
        project.save(
            update_fields=["code_sign_public_key", "code_sign_key_signature", "code_sign_private_key"]
        )
        files = list(AppFile.objects.filter(app_version__app__project=project))
        for app_file in files:
            app_file.file_signature = sign_md5_hex(pair.private_text, app_file.md5_cksum)
        AppFile.objects.bulk_update(files, ["file_signature"], batch_size=500)
    return KeyRotation(
        public_text=pair.public_text,
        private_text=pair.private_text,
        signature=project.code_sign_key_signature,
        kept_on_server=keep,
        resigned_files=len(files),
    )


class Command(BaseCommand):
    help = (
        "Rotate a project's code-signing key: rotate_code_sign_key --project SLUG "
        "[--old_private_key FILE] [--new_private_key_out FILE]"
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--project", required=True)
        parser.add_argument(
            "--old_private_key",
            help="File with the current private key (needed when the server does not keep it).",
        )
        parser.add_argument(
            "--new_private_key_out",
            help="Write the new private key here instead of printing it (when the server does not keep it).",
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        project = Project.objects.filter(slug=opts["project"]).first()
        if project is None:
            raise CommandError(f"no project with slug {opts['project']!r} (see make_project)")
        old_text = ""
        if opts["old_private_key"]:
            path = Path(opts["old_private_key"])
            if not path.is_file():
                raise CommandError(f"private key file not found: {path}")
            old_text = path.read_text()
        out = Path(opts["new_private_key_out"]) if opts["new_private_key_out"] else None
        if out is not None and out.exists():
            raise CommandError(f"{out} exists; not overwriting a key file")
        try:
            rotation = code_sign_key_rotate(project_id=project.pk, old_private_text=old_text)
        except KeyRotationError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(
            self.style.SUCCESS(
                f"New code-signing key for {project.slug}; {rotation.resigned_files} app file(s) re-signed. "
                "Clients get it, signed by the old key, at their next scheduler request."
            )
        )
        if rotation.kept_on_server:
            return
        if out is not None:
            private_write(out, rotation.private_text)
            self.stdout.write(f"New PRIVATE key written to {out}; keep it offline.")
        else:
            self.stdout.write(
                "New code-signing PRIVATE key (store it offline; it is not kept on the server):"
            )
            self.stdout.write(rotation.private_text)
