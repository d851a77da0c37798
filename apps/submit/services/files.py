"""Job files (BOINC's job_file.php) and output downloads (get_output.php).

Uploaded input files are content-addressed: a name is ``jf_`` and the MD5 of the content,
checked on upload, so a file can never be replaced by another under the same name. Each is
kept until its delete time and while a batch holding it is not retired."""

from __future__ import annotations

import hashlib
import hmac
import zipfile
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import IO, Protocol

from django.conf import settings
from django.db import transaction

from apps.core import clock
from apps.projects.models import Project
from apps.submit.models import Batch, JobFile
from apps.submit.services.permissions import NOT_OWNER, SubmitError, batch_manageable
from apps.submit.services.submission import is_job_file_name, job_file_store
from apps.volunteers.models import Account
from apps.work.domain.states import FileDeleteState
from apps.work.models import InputFile, OutputFile, Result, Workunit


class Readable(Protocol):
    def read(self, size: int, /) -> bytes: ...


def _names_check(names: Sequence[str]) -> None:
    for name in names:
        if not is_job_file_name(name):
            raise SubmitError("bad filename")


def _keep(job_file: JobFile, delete_time: datetime | None, batch: Batch | None) -> None:
    if delete_time is not None and (job_file.delete_time is None or job_file.delete_time < delete_time):
        JobFile.objects.filter(id=job_file.id).update(delete_time=delete_time)
    if batch is not None:
        job_file.batches.add(batch)


def _batch(project: Project, account: Account, batch_id: int) -> Batch | None:
    if not batch_id:
        return None
    batch = Batch.objects.filter(project=project, id=batch_id).first()
    if batch is None or batch.owner_id != account.pk:
        raise SubmitError(NOT_OWNER)
    return batch


def _delete_time(seconds: float) -> datetime | None:
    return clock.from_unix(seconds) if seconds > 0 else None


def files_query(
    *, project: Project, account: Account, names: Sequence[str], batch_id: int, delete_time: float
) -> list[int]:
    """The indexes of ``names`` the project lacks; those it has are kept till ``delete_time``
    and joined to the batch."""
    _names_check(names)
    batch = _batch(project, account, batch_id)
    absent = []
    with transaction.atomic():
        for i, name in enumerate(names):
            f = InputFile.objects.filter(project=project, name=name).first()
            present = (
                f is not None
                and f.file_delete_state == FileDeleteState.INIT
                and (project.download_dir / name).is_file()
            )
            if not present or f is None:
                absent.append(i)
                continue
            job_file, _ = JobFile.objects.get_or_create(input_file=f)
            _keep(job_file, _delete_time(delete_time), batch)
    return absent


def files_upload(
    *,
    project: Project,
    account: Account,
    names: Sequence[str],
    files: Sequence[Readable],
    batch_id: int,
    delete_time: float,
) -> None:
    """Store uploaded files under their content-addressed names, all or none."""
    if len(files) != len(names):
        raise SubmitError(f"# of uploaded files ({len(files)}) doesn't agree with request ({len(names)})")
    _names_check(names)
    batch = _batch(project, account, batch_id)
    limit = settings.COBBLESTONE_SUBMIT_MAX_FILE_BYTES
    contents = []
    for name, upload in zip(names, files, strict=True):
        data = upload.read(limit + 1)
        if len(data) > limit:
            raise SubmitError(f"{name}: file over the {limit}-byte limit")
        if hashlib.md5(data).hexdigest() != name.removeprefix("jf_"):
            raise SubmitError(f"{name}: the content's MD5 is not the one its name says")
        contents.append(data)
    written: list[Path] = []
    try:
        with transaction.atomic():
            for name, data in zip(names, contents, strict=True):
                stored = InputFile.objects.filter(project=project, name=name).first()
                if stored is not None and stored.file_delete_state != FileDeleteState.INIT:
                    # Deleted (or being deleted): this upload makes it a file in use again.
                    (project.download_dir / name).unlink(missing_ok=True)
                    InputFile.objects.filter(id=stored.id).update(file_delete_state=FileDeleteState.INIT)
                written += job_file_store(project=project, name=name, data=data)
                job_file = JobFile.objects.get(input_file__project=project, input_file__name=name)
                _keep(job_file, _delete_time(delete_time), batch)
    except BaseException:
        for path in written:
            path.unlink(missing_ok=True)
        raise


# --- outputs ---------------------------------------------------------------------------------


def auth_str_ok(account: Account, subject: str, auth_str: str) -> bool:
    """BOINC's get_output authorisation: the MD5 of the owner's authenticator and the subject."""
    expected = hashlib.md5((account.authenticator + subject).encode()).hexdigest()
    return hmac.compare_digest(expected, auth_str.lower())


def _output_path(project: Project, workunit: Workunit, name: str) -> Path | None:
    """Where an output file is now: the assimilated copy, else the upload area."""
    candidates = []
    if workunit.assimilated_path:
        candidates.append(Path(workunit.assimilated_path) / name)
    candidates.append(project.upload_dir / name)
    roots = (project.results_dir.resolve(), project.upload_dir.resolve())
    for path in candidates:
        resolved = path.resolve()
        if resolved.is_file() and any(resolved.is_relative_to(root) for root in roots):
            return resolved
    return None


def _authorised(batch: Batch, subject: str, auth_str: str, viewer: Account | None) -> bool:
    """A logged-in viewer who may manage the batch, else BOINC's auth_str of its owner."""
    if viewer is not None:
        return batch_manageable(account=viewer, batch=batch)
    return auth_str_ok(batch.owner, subject, auth_str)


def _owner_batch(workunit: Workunit) -> Batch:
    batch = (
        Batch.objects.filter(id=workunit.batch, project_id=workunit.project_id)
        .select_related("owner")
        .first()
    )
    if batch is None:
        raise SubmitError(f"no batch {workunit.batch}")
    return batch


def result_file(
    *, project: Project, result_name: str, file_num: int, auth_str: str = "", viewer: Account | None = None
) -> Path:
    """The path of a result's output file ``file_num``, for the owner of its batch (by
    ``auth_str``) or a ``viewer`` who may manage the batch."""
    result = Result.objects.filter(project=project, name=result_name).select_related("workunit").first()
    if result is None:
        raise SubmitError("no job instance")
    batch = _owner_batch(result.workunit)
    if not _authorised(batch, result.name, auth_str, viewer):
        raise SubmitError(NOT_OWNER if viewer is not None else "bad authenticator")
    names = list(OutputFile.objects.filter(result=result).order_by("ordinal").values_list("name", flat=True))
    if not 0 <= file_num < len(names):
        raise SubmitError(f"bad file num: {file_num}")
    path = _output_path(project, result.workunit, names[file_num])
    if path is None:
        raise SubmitError("no such file")
    return path


def batch_zip(
    *, project: Project, batch_id: int, out: IO[bytes], auth_str: str = "", viewer: Account | None = None
) -> None:
    """Write a zip of the canonical outputs of the batch's jobs (flat, by physical name)."""
    batch = Batch.objects.filter(project=project, id=batch_id).select_related("owner").first()
    if batch is None:
        raise SubmitError(f"no batch {batch_id}")
    if not _authorised(batch, str(batch.id), auth_str, viewer):
        raise SubmitError(NOT_OWNER if viewer is not None else "bad auth str")
    wus = {
        wu.canonical_result_id: wu
        for wu in Workunit.objects.filter(batch=batch.id, canonical_result__isnull=False).only(
            "id", "canonical_result_id", "assimilated_path", "project_id"
        )
    }
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for result_id, name in (
            OutputFile.objects.filter(result_id__in=list(wus))
            .order_by("result_id", "ordinal")
            .values_list("result_id", "name")
        ):
            path = _output_path(project, wus[result_id], name)
            if path is not None:  # an optional output may be missing
                archive.write(path, arcname=name)
