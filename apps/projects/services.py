"""Project creation (BOINC's make_project), and the record and locks of daemon passes."""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime

from django.core.exceptions import ValidationError
from django.db import transaction

from apps.core import clock
from apps.core.db import session_advisory_lock
from apps.core.domain.signing import generate_key_pair
from apps.core.stages import stage
from apps.projects.models import DaemonRun, Project

logger = logging.getLogger(__name__)


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
    return project_save_new(
        project=Project(slug=slug, name=name, **fields), keep_private_key=keep_private_key
    )


def project_save_new(*, project: Project, keep_private_key: bool = True) -> NewProject:
    """make_project's work for a project not yet saved (built by the command or the admin's
    add form): its key pairs, the row, its download/upload/results/archive areas."""
    if Project.objects.filter(slug=project.slug).exists():
        raise ProjectError(f"a project with slug {project.slug!r} already exists")
    code_keys = generate_key_pair()
    upload_keys = generate_key_pair()
    project.code_sign_public_key = code_keys.public_text
    project.code_sign_private_key = code_keys.private_text if keep_private_key else ""
    project.upload_public_key = upload_keys.public_text
    project.upload_private_key = upload_keys.private_text
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


# --- Daemon runs --------------------------------------------------------------------------
# Each periodic daemon (Celery task or ``run_daemons``) runs one bounded pass per project and
# records it as a DaemonRun, which the dashboard and server_status.php read.


@dataclass(frozen=True, slots=True)
class DaemonPass:
    """What one pass of a daemon did: rows handled, rows that failed, a short note."""

    items: int = 0
    errors: int = 0
    message: str = ""

    def __add__(self, other: DaemonPass) -> DaemonPass:
        message = "; ".join(m for m in (self.message, other.message) if m)
        return DaemonPass(self.items + other.items, self.errors + other.errors, message[:2000])


def projects_active_for(*, daemon: str, slug: str | None = None) -> list[Project]:
    """Projects that have not paused ``daemon`` (Project.paused_daemons), optionally one slug."""
    projects = Project.objects.all() if slug is None else Project.objects.filter(slug=slug)
    return [p for p in projects if not p.is_daemon_paused(daemon)]


def daemon_run_record(
    *, project: Project | None, daemon: str, started: datetime, duration: float, outcome: DaemonPass
) -> DaemonRun:
    """Store one pass. An idle pass after an idle pass refreshes that row instead of adding
    one, so a daemon running every 10 s leaves a row per pass that did something, not per tick."""
    with transaction.atomic():
        if not outcome.items and not outcome.errors:
            last = DaemonRun.objects.filter(project=project, daemon=daemon).order_by("-started").first()
            if last is not None and not last.items and not last.errors:
                last.started, last.duration, last.message = started, duration, outcome.message
                last.save(update_fields=["started", "duration", "message"])
                return last
        return DaemonRun.objects.create(
            project=project,
            daemon=daemon,
            started=started,
            duration=duration,
            items=outcome.items,
            errors=outcome.errors,
            message=outcome.message[:2000],
        )


def daemon_pass_run(*, project: Project | None, daemon: str, run: Callable[[], DaemonPass]) -> DaemonPass:
    """Run one pass, time it and record it; an exception is logged and recorded, not raised,
    so one failing project does not stop the others (the pass is retried next time)."""
    started = clock.now()
    t0 = time.monotonic()
    with stage(daemon):
        try:
            outcome = run()
        except Exception as exc:
            logger.exception("%s pass failed for %s", daemon, project.slug if project else "all projects")
            outcome = DaemonPass(errors=1, message=f"{type(exc).__name__}: {exc}")
        daemon_run_record(
            project=project, daemon=daemon, started=started, duration=time.monotonic() - t0, outcome=outcome
        )
    return outcome


def daemon_run_for_projects(
    *, daemon: str, run: Callable[[Project], DaemonPass], slug: str | None = None
) -> DaemonPass:
    """One recorded pass of ``daemon`` for every project that has not paused it."""
    total = DaemonPass()
    for project in projects_active_for(daemon=daemon, slug=slug):
        total += daemon_pass_run(project=project, daemon=daemon, run=functools.partial(run, project))
    return total


def daemon_lock(name: str) -> AbstractContextManager[bool]:
    """Hold the named lock for the block if no other process does: yields whether it is held.

    One feeder or purge pass runs at a time however many workers (and machines) beat sends
    the task to (``session_advisory_lock``: SQLite has one writer at a time anyway).
    """
    return session_advisory_lock(name)


def project_daemons_set_paused(*, project_ids: list[int], daemons: list[str], paused: bool) -> int:
    """Pause (or resume) the named periodic daemons for the projects; returns projects changed."""
    changed = 0
    with transaction.atomic():
        for project in Project.objects.select_for_update().filter(id__in=project_ids):
            current = list(project.paused_daemons or [])
            if paused:
                new = current + [d for d in daemons if d not in current]
            else:
                new = [d for d in current if d not in daemons]
            if new != current:
                project.paused_daemons = new
                project.save(update_fields=["paused_daemons"])
                changed += 1
    return changed
