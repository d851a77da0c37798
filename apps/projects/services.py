"""Project creation: the row, its key pairs and its data areas (BOINC's make_project)."""

from __future__ import annotations

from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.db import transaction

from apps.core.domain.signing import generate_key_pair
from apps.projects.models import Project


class ProjectError(ValueError):
    """A clear, user-facing reason why a project could not be created."""


@dataclass(frozen=True, slots=True)
class NewProject:
    project: Project
    code_sign_private_key: str  # shown once when the server does not keep it


def project_create(*, slug: str, name: str, keep_private_key: bool = True, **fields: object) -> NewProject:
    """Create a project with a code-signing and an upload key pair and its directories.

    With ``keep_private_key=False`` the code-signing private key is printed once by
    the caller and not stored, as projects that sign apps offline prefer.
    """
    if Project.objects.filter(slug=slug).exists():
        raise ProjectError(f"a project with slug {slug!r} already exists")
    code_keys = generate_key_pair()
    upload_keys = generate_key_pair()
    project = Project(
        slug=slug,
        name=name,
        code_sign_public_key=code_keys.public_text,
        code_sign_private_key=code_keys.private_text if keep_private_key else "",
        upload_public_key=upload_keys.public_text,
        upload_private_key=upload_keys.private_text,
        **fields,
    )
    try:
        project.full_clean()
    except ValidationError as exc:
        raise ProjectError("; ".join(f"{k}: {' '.join(v)}" for k, v in exc.message_dict.items())) from exc
    with transaction.atomic():
        project.save()
    project_ensure_dirs(project=project)
    return NewProject(project=project, code_sign_private_key=code_keys.private_text)


def project_ensure_dirs(*, project: Project) -> None:
    for path in (project.download_dir, project.upload_dir, project.results_dir, project.archive_dir):
        path.mkdir(parents=True, exist_ok=True)
