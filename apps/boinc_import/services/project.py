"""The Cobblestone project an import fills: made from the BOINC project directory's
config.xml and keys on the first run, found again on the next ones."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from urllib.parse import urlsplit

from django.core.exceptions import ValidationError
from django.db import transaction

from apps.boinc_import.models import BoincImport
from apps.core.domain.signing import KeyFormatError, parse_private_key, parse_public_key
from apps.projects.models import Project
from apps.projects.services import project_ensure_dirs
from apps.protocol import BoincConfig, ProtocolError, parse_boinc_config

# config.xml options with the same meaning in Cobblestone's Project.
CONFIG_SETTINGS = (
    "daily_result_quota",
    "max_wus_to_send",
    "max_wus_in_progress",
    "max_wus_in_progress_gpu",
    "gpu_multiplier",
    "max_ncpus",
    "min_core_client_version",
    "delete_delay_hours",
    "resend_lost_results",
    "one_result_per_user_per_wu",
)


class BoincImportError(Exception):
    """The import cannot start or go on; the message tells the operator why."""


@dataclass(frozen=True, slots=True)
class ProjectFiles:
    """What the import takes from the BOINC project directory besides data files."""

    config: BoincConfig
    code_sign_public_key: str
    code_sign_private_key: str
    upload_public_key: str
    upload_private_key: str
    db_revision: int | None


@dataclass(slots=True)
class OpenedProject:
    project: Project
    record: BoincImport | None
    warnings: list[str] = field(default_factory=list)


def project_files_read(project_dir: Path) -> ProjectFiles:
    """config.xml, the keys (keys/code_sign_public, upload_public and upload_private; the
    code-signing private key only if it is there) and db_revision, checked."""
    config_path = project_dir / "config.xml"
    if not config_path.is_file():
        raise BoincImportError(f"{project_dir} is not a BOINC project directory: it has no config.xml")
    try:
        config = parse_boinc_config(config_path.read_bytes())
    except ProtocolError as exc:
        raise BoincImportError(f"{config_path}: {exc}") from None
    keys = project_dir / "keys"
    code_public = _key(keys / "code_sign_public", private=False, required=True)
    upload_public = _key(keys / "upload_public", private=False, required=True)
    upload_private = _key(keys / "upload_private", private=True, required=True)
    if parse_private_key(upload_private).public != parse_public_key(upload_public):
        raise BoincImportError(f"{keys}: upload_private and upload_public are not one key pair")
    return ProjectFiles(
        config=config,
        code_sign_public_key=code_public,
        code_sign_private_key=_key(keys / "code_sign_private", private=True, required=False),
        upload_public_key=upload_public,
        upload_private_key=upload_private,
        db_revision=_revision(project_dir / "db_revision"),
    )


def _key(path: Path, *, private: bool, required: bool) -> str:
    if not path.is_file():
        if required:
            raise BoincImportError(f"{path} is missing (attached clients need the project's keys)")
        return ""
    text = path.read_text(encoding="ascii", errors="replace")
    try:
        (parse_private_key if private else parse_public_key)(text)
    except KeyFormatError as exc:
        raise BoincImportError(f"{path} is not a BOINC key: {exc}") from None
    return text


def _revision(path: Path) -> int | None:
    if not path.is_file():
        return None
    try:
        return int(path.read_text().strip())
    except ValueError:
        raise BoincImportError(f"{path} does not hold a number") from None


def project_open(
    *, slug: str, files: ProjectFiles, source: str, project_dir: Path, now: datetime, dry_run: bool
) -> OpenedProject:
    """The project an earlier run of this import created, or a new one (unsaved in a dry run)."""
    existing = Project.objects.filter(slug=slug).first()
    if existing is not None:
        record = BoincImport.objects.filter(project=existing).first()
        if record is None:
            raise BoincImportError(
                f"project {slug!r} already exists and was not made by importing a BOINC project; "
                "choose another --project"
            )
        if record.source != source:
            raise BoincImportError(f"project {slug!r} was imported from {record.source}, not {source}")
        return OpenedProject(existing, record)
    opened = OpenedProject(_new_project(slug, files), None)
    opened.warnings += _settings(opened.project, files.config)
    opened.warnings += _base_url(opened.project, files.config.master_url)
    if dry_run:
        return opened
    with transaction.atomic():
        opened.project.save()
        opened.record = BoincImport.objects.create(
            project=opened.project,
            source=source,
            project_dir=str(project_dir),
            db_revision=files.db_revision,
            started=now,
        )
    project_ensure_dirs(project=opened.project)
    return opened


def _new_project(slug: str, files: ProjectFiles) -> Project:
    project = Project(
        slug=slug,
        name=files.config.long_name or slug,
        code_sign_public_key=files.code_sign_public_key,
        code_sign_private_key=files.code_sign_private_key,
        upload_public_key=files.upload_public_key,
        upload_private_key=files.upload_private_key,
    )
    try:
        project.full_clean(validate_unique=False)
    except ValidationError as exc:
        raise BoincImportError(f"project {slug!r}: {_messages(exc)}") from None
    return project


def _settings(project: Project, config: BoincConfig) -> list[str]:
    """config.xml's scheduling options; one Cobblestone refuses keeps its default (a warning)."""
    warnings = []
    given = {name: getattr(config, name) for name in CONFIG_SETTINGS}
    if config.report_grace_period is not None:
        given["report_grace_period"] = config.report_grace_period
    elif config.grace_period_hours is not None:
        given["report_grace_period"] = round(config.grace_period_hours * 3600)
    for name, value in given.items():
        if value is None:
            continue
        default = getattr(project, name)
        setattr(project, name, value)
        try:
            project.clean_fields(exclude=[f.name for f in Project._meta.fields if f.name != name])
        except ValidationError as exc:
            setattr(project, name, default)
            warnings.append(f"config.xml {name} = {value!r} not taken ({_messages(exc)}); kept {default!r}")
    return warnings


def _base_url(project: Project, master_url: str) -> list[str]:
    """Attached clients know the project by its master URL: Cobblestone's is
    <base URL>/<slug>/, so a master URL of that shape keeps every client attached."""
    if not master_url:
        return ["config.xml has no master_url: check that attached clients' master URL reaches this project"]
    parts = urlsplit(master_url)
    if parts.path.strip("/") != project.slug:
        return [
            f"the BOINC master URL {master_url} does not end in /{project.slug}/: attached clients "
            f"need it redirected to {project.master_url} (see docs/import.md)"
        ]
    project.base_url = f"{parts.scheme}://{parts.netloc}"
    try:
        project.clean_fields(exclude=[f.name for f in Project._meta.fields if f.name != "base_url"])
    except ValidationError as exc:
        project.base_url = ""
        return [f"master URL {master_url}: {_messages(exc)}"]
    return []


def _messages(exc: ValidationError) -> str:
    return "; ".join(f"{k}: {' '.join(v)}" for k, v in exc.message_dict.items())
