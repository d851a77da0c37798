"""Creating batches and submitting their jobs (BOINC's create_batch, estimate_batch and
submit_batch): job descriptions become create_work's jobs, each with its fair-share
priority, in one transaction."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Sum

from apps.applications.models import App
from apps.core import clock
from apps.projects.models import Project
from apps.protocol import ProtocolError
from apps.protocol.filenames import is_safe_file_name
from apps.protocol.submit_rpc import BatchDesc, InputFileDesc, JobDesc
from apps.protocol.templates import InputTemplate, OutputTemplate, parse_input_template, parse_output_template
from apps.submit.domain import fairshare
from apps.submit.domain.states import BatchState
from apps.submit.models import Batch, JobFile, UserSubmit
from apps.submit.services.batches import submitter_jobs_in_progress
from apps.submit.services.permissions import SubmitError
from apps.volunteers.models import Account
from apps.work.domain.assignments import Target, TargetType
from apps.work.models import InputFile
from apps.work.services.create import (
    DEFAULT_FPOPS_EST,
    WU_PARAMS,
    InputSpec,
    JobSpec,
    RemoteFile,
    WorkError,
    remote_check,
    text_check,
    workunits_create,
)
from apps.work.services.templates import outputs_from_template

MAX_BATCH_NAME = 254


def templates_dir(project: Project) -> Path:
    """The project's templates (BOINC's templates/): ``<app>_in`` and ``<app>_out`` are an
    app's defaults; batches may name others here."""
    return project.data_dir / "templates"


def template_text(project: Project, file_name: str) -> str | None:
    """A template file's text, or None if there is none; a path trick is refused."""
    if not is_safe_file_name(file_name) or file_name.startswith("."):
        raise SubmitError(f"bad template file name: {file_name}")
    path = templates_dir(project) / file_name
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise SubmitError(f"can't read template {file_name}: {exc}") from None


def job_file_name(md5: str) -> str:
    """The physical name of an uploaded or inline job file: its content's MD5."""
    return f"jf_{md5}"


def is_job_file_name(name: str) -> bool:
    digest = name.removeprefix("jf_")
    return name.startswith("jf_") and len(digest) == 32 and all(c in "0123456789abcdef" for c in digest)


def _unique_name(project: Project, name: str) -> str:
    if not Batch.objects.filter(project=project, name=name).exists():
        return name
    return f"{name[: MAX_BATCH_NAME - 9]}#{os.urandom(4).hex()}"


def _batch_name_check(name: str) -> None:
    if len(name) > MAX_BATCH_NAME:
        raise SubmitError(f"batch name longer than {MAX_BATCH_NAME} characters")
    try:
        text_check("batch name", name)
    except WorkError as exc:
        raise SubmitError(str(exc)) from None


def batch_create(
    *,
    project: Project,
    account: Account,
    app: App,
    name: str = "",
    expire_time: float = 0,
    now: datetime | None = None,
) -> Batch:
    """An empty batch (state INIT) that submit_batch fills; a name already used is refused."""
    now = now or clock.now()
    _batch_name_check(name)
    if name and Batch.objects.filter(project=project, name=name).exists():
        raise SubmitError(f"a batch named {name!r} already exists")
    name = name or _unique_name(project, f"{account.name}:{app.name}:{now:%a, %d %b %Y %H:%M:%S %z}")
    try:
        with transaction.atomic():
            return Batch.objects.create(
                project=project,
                owner=account,
                app=app,
                name=name,
                create_time=now,
                expire_time=clock.from_unix(expire_time) if expire_time > 0 else None,
            )
    except IntegrityError:
        raise SubmitError(f"a batch named {name!r} already exists") from None


def batch_expire_time_set(*, batch: Batch, expire_time: float) -> None:
    batch.expire_time = clock.from_unix(expire_time) if expire_time > 0 else None
    Batch.objects.filter(id=batch.id).update(expire_time=batch.expire_time)


# --- job descriptions -----------------------------------------------------------------------


@dataclass(slots=True)
class _Templates:
    """The batch-level templates (named in the request, or the app's defaults)."""

    input: InputTemplate | None
    output: OutputTemplate | None


def _batch_templates(project: Project, app: App, desc: BatchDesc) -> _Templates:
    in_text = template_text(project, desc.input_template_filename or f"{app.name}_in")
    out_text = template_text(project, desc.output_template_filename or f"{app.name}_out")
    if desc.input_template_filename and in_text is None:
        raise SubmitError(f"no input template {desc.input_template_filename}")
    if desc.output_template_filename and out_text is None:
        raise SubmitError(f"no output template {desc.output_template_filename}")
    try:
        return _Templates(
            parse_input_template(in_text) if in_text is not None else None,
            parse_output_template(out_text) if out_text is not None else None,
        )
    except ProtocolError as exc:
        raise SubmitError(f"couldn't parse template: {exc.message}") from None


def _job_templates(job: JobDesc, batch: _Templates, index: int) -> _Templates:
    try:
        return _Templates(
            parse_input_template(job.input_template) if job.input_template else batch.input,
            parse_output_template(job.output_template) if job.output_template else batch.output,
        )
    except ProtocolError as exc:
        raise SubmitError(f"job {index}: bad template: {exc.message}") from None


def job_flops(job: JobDesc, template: InputTemplate | None, params: dict[str, float]) -> float:
    """The job's FLOPs estimate: its own, else its template's, else the batch's, else the default."""
    if job.rsc_fpops_est:
        return job.rsc_fpops_est
    if template is not None and template.workunit.rsc_fpops_est:
        return template.workunit.rsc_fpops_est
    return params.get("rsc_fpops_est") or DEFAULT_FPOPS_EST


def _target(job: JobDesc) -> Target | None:
    for kind, value in ((TargetType.TEAM, job.target_team), (TargetType.USER, job.target_user)):
        if value:
            return Target(kind, value)
    return Target(TargetType.HOST, job.target_host) if job.target_host else None


class _Stager:
    """Input files of the jobs: staged names as they are, inline contents written once as
    content-addressed job files; files written here are removed if the batch fails."""

    def __init__(self, project: Project) -> None:
        self.project = project
        self.written: list[Path] = []
        self.job_files: set[int] = set()
        self.inline: dict[str, str] = {}
        self.remote: dict[str, RemoteFile] = {}

    def name(self, f: InputFileDesc, where: str) -> str:
        if f.mode == "local_staged":
            name = f.source.strip()
            if not is_safe_file_name(name) or name.startswith("."):
                raise SubmitError(f"{where}: bad file name {name[:60]!r}")
            return name
        if f.mode == "inline":
            return self._inline(f.source, where)
        if f.mode == "remote":
            return self._remote(f, where)
        raise SubmitError(f"{where}: unsupported file mode: {f.mode}")

    def _remote(self, f: InputFileDesc, where: str) -> str:
        """A file hosts download from the submitter's URL, named by its MD5 as BOINC does."""
        if not float(f.nbytes).is_integer():
            raise SubmitError(f"{where}: remote input: nbytes must be a whole number")
        remote = RemoteFile(url=f.url.strip(), md5=f.md5.strip().lower(), nbytes=int(f.nbytes))
        try:
            remote_check(remote)
        except WorkError as exc:
            raise SubmitError(f"{where}: {exc}") from None
        name = job_file_name(remote.md5)
        known = self.remote.setdefault(name, remote)
        if known.nbytes != remote.nbytes:
            raise SubmitError(
                f"{where}: remote input: MD5 {remote.md5} was given with two sizes in this batch"
            )
        return name

    def _inline(self, contents: str, where: str) -> str:
        if contents in self.inline:
            return self.inline[contents]
        data = contents.encode("utf-8")
        if len(data) > settings.COBBLESTONE_SUBMIT_MAX_FILE_BYTES:
            raise SubmitError(
                f"{where}: inline file over the {settings.COBBLESTONE_SUBMIT_MAX_FILE_BYTES}-byte limit"
            )
        md5 = hashlib.md5(data).hexdigest()
        name = job_file_name(md5)
        self.written += job_file_store(project=self.project, name=name, data=data)
        self.inline[contents] = name
        return name


def job_file_store(*, project: Project, name: str, data: bytes) -> list[Path]:
    """Write a job file into the download area (unless there) and record it; the paths written."""
    written: list[Path] = []
    path = project.download_dir / name
    if not path.exists():
        project.download_dir.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{name}.{os.getpid()}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)
        written.append(path)
    md5 = hashlib.md5(data).hexdigest()
    input_file, _ = InputFile.objects.get_or_create(
        project=project, name=name, defaults={"md5_cksum": md5, "nbytes": len(data)}
    )
    if input_file.remote_url:  # known as a remote input: hosts now download this copy
        InputFile.objects.filter(id=input_file.id).update(remote_url="")
    JobFile.objects.get_or_create(input_file=input_file)
    return written


def _inputs(
    job: JobDesc, template: InputTemplate | None, stager: _Stager, index: int
) -> tuple[InputSpec, ...]:
    where = f"job {index}"
    names = [stager.name(f, where) for f in job.input_files]
    if template is None:
        return tuple(InputSpec(name=n, open_name=n, remote=stager.remote.get(n)) for n in names)
    if len(names) != len(template.files):
        raise SubmitError(
            f"wrong # of input files for job {index}: need {len(template.files)}, got {len(names)}"
        )
    refs = {r.file_number: r for r in template.workunit.file_refs}
    numbered = sorted(((f.number if f.number is not None else i), i, f) for i, f in enumerate(template.files))
    specs = []
    for number, i, file in numbered:
        ref = refs.get(number)
        specs.append(
            InputSpec(
                name=names[i],
                remote=stager.remote.get(names[i]),
                open_name=ref.open_name if ref and ref.open_name else names[i],
                copy_file=ref.copy_file if ref else True,
                sticky=file.sticky,
                no_delete=file.no_delete,
                gzip=file.gzip,
            )
        )
    return tuple(specs)


def _job_spec(
    job: JobDesc,
    templates: _Templates,
    params: dict[str, float],
    stager: _Stager,
    *,
    index: int,
    batch_id: int,
    priority: int,
) -> JobSpec:
    values: dict[str, object] = {}
    if templates.input is not None:
        wu = templates.input.workunit
        values.update({k: getattr(wu, k) for k in WU_PARAMS if getattr(wu, k) is not None})
        if wu.command_line is not None:
            values["command_line"] = wu.command_line
    values.update(params)
    if job.rsc_fpops_est:
        values["rsc_fpops_est"] = job.rsc_fpops_est
    if job.command_line:
        values["command_line"] = job.command_line
    try:
        outputs = outputs_from_template(templates.output)
    except WorkError as exc:
        raise SubmitError(f"job {index}: {exc}") from None
    return JobSpec(
        name=job.name,
        inputs=_inputs(job, templates.input, stager, index),
        outputs=outputs,
        priority=priority,
        batch=batch_id,
        target=_target(job),
        **values,  # type: ignore[arg-type]
    )


# --- estimate and submit ------------------------------------------------------------------------


def project_speed(project: Project) -> float:
    """The project's FLOPS from its volunteers' recent average credit."""
    total = Account.objects.filter(project=project).aggregate(t=Sum("expavg_credit"))["t"] or 0.0
    return fairshare.project_flops(total)


def batch_estimate(*, project: Project, app: App, desc: BatchDesc) -> float:
    """Seconds the whole project would take for the batch (BOINC's estimate_batch)."""
    templates = _batch_templates(project, app, desc)
    flops = sum(
        job_flops(job, _job_templates(job, templates, i).input, desc.job_params)
        for i, job in enumerate(desc.jobs)
    )
    return fairshare.estimated_seconds(flops, project_speed(project))


def _allocate(
    project: Project, submitter: UserSubmit, flops: Sequence[float], now: datetime
) -> fairshare.Allocation:
    """Advance the submitter's fair-share clock over the jobs (its row locked till commit)."""
    locked = UserSubmit.objects.select_for_update().get(pk=submitter.pk)
    total_quota = UserSubmit.objects.filter(account__project=project).aggregate(t=Sum("quota"))["t"] or 0.0
    allocation = fairshare.allocate(
        flops,
        clock=locked.logical_start_time,
        now=now.timestamp(),
        share_of_project=fairshare.share(locked.quota, total_quota),
        flops_per_second=project_speed(project),
    )
    UserSubmit.objects.filter(pk=submitter.pk).update(logical_start_time=allocation.logical_end_time)
    return allocation


def batch_submit(
    *,
    project: Project,
    account: Account,
    submitter: UserSubmit,
    app: App,
    desc: BatchDesc,
    now: datetime | None = None,
) -> Batch:
    """Create the batch's jobs in one transaction: a refusal writes nothing.

    Jobs are ordered by the submitter's fair-share clock unless the request sets a priority
    (for the batch or a job) without ``<allocation_priority/>``."""
    now = now or clock.now()
    if not desc.jobs:
        raise SubmitError("no jobs in batch")
    if desc.app_version_num:
        raise SubmitError("app_version_num is not supported: jobs run on any current version")
    if submitter.quota <= 0:
        raise SubmitError("submitter has no quota")
    limit = submitter.max_jobs_in_progress
    if limit and submitter_jobs_in_progress(account.pk) + len(desc.jobs) > limit:
        raise SubmitError("limit on jobs in progress exceeded")
    batch_templates = _batch_templates(project, app, desc)
    job_templates = [_job_templates(job, batch_templates, i) for i, job in enumerate(desc.jobs)]
    flops = [
        job_flops(job, t.input, desc.job_params) for job, t in zip(desc.jobs, job_templates, strict=True)
    ]
    stager = _Stager(project)
    try:
        with transaction.atomic():
            batch = _batch_for_submit(project, account, app, desc, now)
            use_allocation = desc.allocation_priority or desc.priority is None
            allocation = _allocate(project, submitter, flops, now)
            specs = [
                _job_spec(
                    job,
                    templates,
                    desc.job_params,
                    stager,
                    index=i,
                    batch_id=batch.id,
                    priority=job.priority
                    if job.priority is not None
                    else (allocation.priorities[i] if use_allocation else desc.priority or 0),
                )
                for i, (job, templates) in enumerate(zip(desc.jobs, job_templates, strict=True))
            ]
            workunits_create(project=project, app=app, jobs=specs, now=now)
            used = {spec.name for job in specs for spec in job.inputs}
            batch.job_files.add(
                *JobFile.objects.filter(input_file__project=project, input_file__name__in=used)
            )
            estimate = fairshare.estimated_seconds(sum(flops), project_speed(project))
            batch.njobs = len(specs)
            batch.state = BatchState.IN_PROGRESS
            batch.logical_start_time = allocation.logical_start_time
            batch.logical_end_time = allocation.logical_end_time
            batch.est_completion_time = now + timedelta(seconds=min(estimate, 1e9))
            batch.save(
                update_fields=[
                    "njobs",
                    "state",
                    "logical_start_time",
                    "logical_end_time",
                    "est_completion_time",
                ]
            )
    except WorkError as exc:
        _remove(stager.written)
        raise SubmitError(str(exc)) from None
    except BaseException:
        _remove(stager.written)
        raise
    return batch


def _remove(paths: list[Path]) -> None:
    for path in paths:
        path.unlink(missing_ok=True)


def _batch_for_submit(project: Project, account: Account, app: App, desc: BatchDesc, now: datetime) -> Batch:
    """The INIT batch the request names by id, else a new one (named as the request says)."""
    if not desc.batch_id:
        return batch_create(project=project, account=account, app=app, name=desc.batch_name, now=now)
    batch = Batch.objects.select_for_update().filter(project=project, id=desc.batch_id).first()
    if batch is None:
        raise SubmitError(f"no batch {desc.batch_id}")
    if batch.owner_id != account.pk:
        raise SubmitError("not owner of batch")
    if batch.state != BatchState.INIT:
        raise SubmitError("batch not in init state")
    if batch.app_id != app.pk:
        raise SubmitError("batch is for another app")
    return batch
