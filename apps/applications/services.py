"""Apps and app versions: creation (with file copying and signing) and deprecation."""

from __future__ import annotations

import hashlib
import shutil
from dataclasses import dataclass
from pathlib import Path

from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.db import transaction

from apps.applications.domain.plan_classes import BUILTIN_PLAN_CLASSES, PlanClassSpec
from apps.applications.models import App, AppFile, AppVersion, PlanClass
from apps.core.domain.resources import ProcType
from apps.core.domain.signing import sign_md5_hex
from apps.projects.models import Platform, Project


class AppError(ValueError):
    """A clear, user-facing reason why an app or version could not be created."""


APP_DEFAULT_FIELDS = (
    "user_friendly_name",
    "min_quorum",
    "target_nresults",
    "max_error_results",
    "max_total_results",
    "max_success_results",
    "delay_bound",
)


def app_create(*, project: Project, name: str, **fields: object) -> App:
    """Create an app (BOINC's add_app); refuses duplicates and inconsistent quorum settings."""
    if not name or "/" in name or name.strip() != name:
        raise AppError(f"invalid app name {name!r}")
    if App.objects.filter(project=project, name=name).exists():
        raise AppError(f"app {name!r} already exists in project {project.slug}")
    app = App(project=project, name=name, **{k: v for k, v in fields.items() if v is not None})
    _app_check(app)
    app.save()
    return app


def app_update(*, app: App, **fields: object) -> App:
    """Change an app's settings (BOINC's update_app); fields given as None keep their value."""
    changed = {k: v for k, v in fields.items() if v is not None}
    with transaction.atomic():
        locked = App.objects.select_for_update().get(pk=app.pk)
        for key, value in changed.items():
            setattr(locked, key, value)
        _app_check(locked)
        locked.save(update_fields=list(changed) or None)
    return locked


def _app_check(app: App) -> None:
    if app.target_nresults < app.min_quorum:
        raise AppError("target_nresults must be at least min_quorum")
    try:
        app.full_clean()
    except ValidationError as exc:
        raise AppError(
            "; ".join(
                " ".join(v) if k == NON_FIELD_ERRORS else f"{k}: {' '.join(v)}"
                for k, v in exc.message_dict.items()
            )
        ) from exc


def plan_class_spec(*, project: Project, name: str) -> PlanClassSpec:
    """The plan class by name: a project-defined row first, then BOINC's standard names."""
    row = PlanClass.objects.filter(project=project, name=name).first()
    if row is not None:
        return PlanClassSpec(
            name=row.name,
            proc_type=ProcType(row.proc_type),
            avg_ncpus=row.avg_ncpus,
            multi_thread=row.multi_thread,
            max_ncpus=row.max_ncpus,
            gpu_usage=row.gpu_usage,
            min_gpu_ram_mb=row.min_gpu_ram_mb,
            needs_opencl=row.needs_opencl,
            min_compute_capability=row.min_compute_capability,
        )
    if name in BUILTIN_PLAN_CLASSES:
        return BUILTIN_PLAN_CLASSES[name]
    known = ", ".join(sorted(n for n in BUILTIN_PLAN_CLASSES if n))
    raise AppError(f"unknown plan class {name!r} (built in: {known}; or define it in the admin)")


@dataclass(frozen=True, slots=True)
class AppFileSpec:
    """A file to add to a version; ``signature`` given when it was signed offline."""

    path: Path
    open_name: str = ""
    copy_file: bool = False
    signature: str = ""


def app_version_add(
    *,
    project: Project,
    app_name: str,
    version_num: int,
    platform_name: str,
    files: list[AppFileSpec],
    plan_class: str = "",
    api_version: str = "",
    cmdline: str = "",
) -> AppVersion:
    """Copy the files into the download area, sign them, and create the version.

    The first file is the main program. Files are named ``<app>_<version>_<platform>[_<plan>]_<name>``
    so versions never overwrite each other. A file is signed with the project's
    private key if the server holds it; otherwise its offline signature is required.
    """
    app = App.objects.filter(project=project, name=app_name).first()
    if app is None:
        raise AppError(f"no app named {app_name!r} in project {project.slug}")
    if version_num <= 0:
        raise AppError("version_num must be a positive integer (e.g. 100 for 1.00)")
    if not files:
        raise AppError("at least one file (the main program) is required")
    names = [spec.path.name for spec in files]
    if len(set(names)) != len(names):
        raise AppError(f"two files of one version cannot share a name: {', '.join(sorted(names))}")
    for spec in files:
        if not spec.path.is_file():
            raise AppError(f"file not found: {spec.path}")
        if not spec.signature and not project.code_sign_private_key:
            raise AppError(f"{spec.path.name}: no signature given and the project keeps no private key")
    spec_pc = plan_class_spec(project=project, name=plan_class)
    platform, _ = Platform.objects.get_or_create(name=platform_name)
    if AppVersion.objects.filter(
        app=app, platform=platform, version_num=version_num, plan_class=plan_class
    ).exists():
        raise AppError(
            f"version {version_num} of {app_name} for {platform_name} {plan_class!r} already exists"
        )

    project.download_dir.mkdir(parents=True, exist_ok=True)
    prefix = f"{app.name}_{version_num}_{platform_name}" + (f"_{plan_class}" if plan_class else "")
    copied: list[Path] = []
    try:
        with transaction.atomic():
            version = AppVersion.objects.create(
                app=app,
                platform=platform,
                version_num=version_num,
                plan_class=plan_class,
                api_version=api_version,
                cmdline=cmdline,
                proc_type=spec_pc.proc_type.value,
                avg_ncpus=spec_pc.avg_ncpus,
                max_ncpus=spec_pc.max_ncpus,
                multi_thread=spec_pc.multi_thread,
                gpu_usage=spec_pc.gpu_usage,
            )
            for ordinal, spec in enumerate(files):
                data = spec.path.read_bytes()
                md5 = hashlib.md5(data).hexdigest()
                physical = f"{prefix}_{spec.path.name}"
                target = project.download_dir / physical
                shutil.copyfile(spec.path, target)
                copied.append(target)
                signature = spec.signature or sign_md5_hex(project.code_sign_private_key, md5)
                AppFile.objects.create(
                    app_version=version,
                    file_name=physical,
                    open_name=spec.open_name or (spec.path.name if ordinal else ""),
                    main_program=ordinal == 0,
                    copy_file=spec.copy_file,
                    md5_cksum=md5,
                    nbytes=len(data),
                    file_signature=signature,
                    ordinal=ordinal,
                )
    except Exception:
        for path in copied:
            path.unlink(missing_ok=True)
        raise
    return version


def app_version_deprecate(*, app_version_ids: list[int]) -> int:
    """No new jobs go to deprecated versions; jobs in progress finish normally."""
    with transaction.atomic():
        return AppVersion.objects.filter(id__in=app_version_ids).update(deprecated=True)
