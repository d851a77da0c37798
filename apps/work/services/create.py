"""Work creation (BOINC's create_work): stage input files, create workunits and their results."""

from __future__ import annotations

import gzip
import hashlib
import re
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import URLValidator
from django.db import IntegrityError, transaction

# The bounds live with the rules (App checks its defaults with them too); callers import them here.
from apps.applications.domain.job_bounds import MAX_DELAY_BOUND as MAX_DELAY_BOUND
from apps.applications.domain.job_bounds import MAX_REPLICAS as MAX_REPLICAS
from apps.applications.domain.job_bounds import job_bounds_problems
from apps.applications.models import JOB_DEFAULT_FIELDS, App
from apps.core import clock
from apps.core.db import WriteBatch, analyze_tables
from apps.core.domain.signing import sign_upload_certificate
from apps.projects.models import Project
from apps.protocol import xml_safe_text
from apps.protocol.filenames import MAX_FILE_NAME_BYTES, is_safe_file_name
from apps.work.domain.assignments import Target
from apps.work.domain.locality_names import file_name_of_workunit, validate_locality_file_name
from apps.work.domain.states import FileDeleteState, ServerState
from apps.work.models import InputFile, OutputFile, Result, Workunit, WorkunitFileRef
from apps.work.queries import input_file_states_key_shared, rows_insert
from apps.work.services.assignments import assignments_create, targets_missing, transitioner_flags_for


class WorkError(ValueError):
    """A clear, user-facing reason why work could not be created; nothing was written."""


INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
# Results are named <workunit>_<n> and their outputs <result>_<m>; each must stay a file
# name (at most 255 bytes), so a workunit name leaves room for both suffixes.
MAX_WORKUNIT_NAME_BYTES = 200


def name_check(
    kind: str, name: str, *, max_bytes: int = MAX_FILE_NAME_BYTES, hidden_ok: bool = False
) -> None:
    """Refuse a name that cannot be a file name on the server and on hosts, or XML text.

    Workunit, result, output and input names become files in the project's download and
    upload areas and on volunteers' disks, and appear in every reply that carries them.
    """
    if (
        not is_safe_file_name(name)
        or not _xml_writable(name)
        or name != name.strip()
        or (name.startswith(".") and not hidden_ok)
    ):
        raise WorkError(
            f"invalid {kind} name {name!r}: no '/', '\\', '%', '..', control characters, "
            "leading '.' or surrounding spaces"
        )
    if len(name.encode("utf-8", "surrogatepass")) > max_bytes:
        raise WorkError(f"invalid {kind} name {name[:40]!r}...: longer than {max_bytes} bytes")


def text_check(kind: str, text: str) -> None:
    """Refuse text that a reply could not carry as XML (control characters other than
    tab and newlines, lone surrogates, U+FFFE, U+FFFF)."""
    if not _xml_writable(text):
        raise WorkError(f"{kind} holds a character XML cannot carry (a control character, U+FFFE or U+FFFF)")


def _xml_writable(text: str) -> bool:
    return xml_safe_text(text) == text  # the reply writer's own rule


@dataclass(frozen=True, slots=True)
class RemoteFile:
    """An input hosts download from a URL of the submitter's, never in the download area
    (BOINC's remote input mode): the server knows only its checksum and size."""

    url: str
    md5: str
    nbytes: int


@dataclass(frozen=True, slots=True)
class InputSpec:
    """An input file for a workunit: a path to stage, the name of a file already staged, or
    (``remote``, with its name) a file at a URL."""

    path: Path | None = None
    remote: RemoteFile | None = None
    name: str = ""
    open_name: str = ""
    copy_file: bool = True
    sticky: bool = False
    report_on_rpc: bool = False
    no_delete: bool = False
    gzip: bool = False


@dataclass(frozen=True, slots=True)
class OutputSpec:
    """One output file of every result of the workunit (BOINC's output template entry)."""

    open_name: str = "out"
    max_nbytes: int = 1_000_000
    copy_file: bool = True
    optional: bool = False
    gzip_when_done: bool = False
    upload: bool = True
    sticky: bool = False  # kept on the host after the result is reported
    sequence_state: bool = False  # the state a sequence's next step reads (else a report)


DEFAULT_OUTPUTS = (OutputSpec(),)

# JobSpec's workunit parameters in BOINC's names (create_work options, template elements, API fields).
WU_PARAMS = (
    "rsc_fpops_est",
    "rsc_fpops_bound",
    "rsc_memory_bound",
    "rsc_disk_bound",
    "delay_bound",
    "min_quorum",
    "target_nresults",
    "max_error_results",
    "max_total_results",
    "max_success_results",
)


@dataclass(frozen=True, slots=True)
class JobSpec:
    """Everything create_work needs for one workunit; None means "use the app's default"."""

    name: str = ""
    inputs: tuple[InputSpec, ...] = ()
    outputs: tuple[OutputSpec, ...] = DEFAULT_OUTPUTS
    command_line: str = ""
    rsc_fpops_est: float | None = None
    rsc_fpops_bound: float | None = None
    rsc_memory_bound: float | None = None
    rsc_disk_bound: float | None = None
    delay_bound: float | None = None
    min_quorum: int | None = None
    target_nresults: int | None = None
    max_error_results: int | None = None
    max_total_results: int | None = None
    max_success_results: int | None = None
    priority: int = 0
    batch: int = 0
    # Only for this host, user or team, or broadcast (BOINC's --target_* and --broadcast*).
    target: Target | None = None
    extra: dict[str, object] = field(default_factory=dict)


# A batch this large changes the tables enough that the planner needs fresh statistics
# before the scheduler's next query (autovacuum comes later; SQLite never analyzes).
ANALYZE_AFTER = 1000

# BOINC's create_work defaults (tools/backend_lib.h) for the size estimates.
DEFAULT_FPOPS_EST = 3.6e12
DEFAULT_FPOPS_BOUND = 8.64e13
DEFAULT_MEMORY_BOUND = 5e8
DEFAULT_DISK_BOUND = 1e9


def input_file_stage(*, project: Project, spec: InputSpec, copied: list[Path] | None = None) -> InputFile:
    """Copy an input file into the download area (or find it there) with its md5 and size.

    Paths newly written are appended to ``copied`` so a failed batch can remove them. A known
    file the file deleter has removed is copied in again from ``spec.path``; named without
    a path it is refused.
    """
    if spec.remote is not None:
        return _remote_stage(project, spec, spec.remote)
    if spec.path is None:
        name_check("input file", spec.name)
        existing = InputFile.objects.filter(project=project, name=spec.name).first()
        if existing is None:
            raise WorkError(f"input file {spec.name!r} is not in the download area")
        if existing.file_delete_state == FileDeleteState.DONE:
            raise WorkError(_deleted_message(spec.name))
        return _needed_again(existing)
    if not spec.path.is_file():
        raise WorkError(f"input file not found: {spec.path}")
    name = spec.name or spec.path.name
    name_check("input file", name)
    data = spec.path.read_bytes()
    md5 = hashlib.md5(data).hexdigest()
    existing = InputFile.objects.filter(project=project, name=name).first()
    if existing is not None:
        if existing.md5_cksum != md5:
            raise WorkError(f"a different file named {name!r} is already in the download area")
        restored = existing.file_delete_state == FileDeleteState.DONE
        if restored:
            _copy_in(project, spec.path, name, data, gz=existing.gzip, copied=copied)
        return _needed_again(existing, restored=restored)
    _copy_in(project, spec.path, name, data, gz=spec.gzip, copied=copied)
    return InputFile.objects.create(
        project=project,
        name=name,
        md5_cksum=md5,
        nbytes=len(data),
        sticky=spec.sticky,
        report_on_rpc=spec.report_on_rpc,
        no_delete=spec.no_delete,
        gzip=spec.gzip,
    )


def _remote_stage(project: Project, spec: InputSpec, remote: RemoteFile) -> InputFile:
    """The row of a remote input: made, or found with the same checksum and size. A copy in
    the download area, if there is one, is served instead of the URL."""
    name_check("input file", spec.name)
    remote_check(remote)
    existing = InputFile.objects.filter(project=project, name=spec.name).first()
    if existing is None:
        return InputFile.objects.create(
            project=project,
            name=spec.name,
            md5_cksum=remote.md5,
            nbytes=remote.nbytes,
            remote_url=remote.url,
            sticky=spec.sticky,
            report_on_rpc=spec.report_on_rpc,
            no_delete=spec.no_delete,
        )
    if (existing.md5_cksum, existing.nbytes) != (remote.md5, remote.nbytes):
        raise WorkError(f"a different file named {spec.name!r} is already known")
    if existing.file_delete_state == FileDeleteState.DONE:
        _remote_revive(existing.id, remote)
        existing.refresh_from_db(fields=["file_delete_state", "remote_url"])
        return existing
    return _needed_again(existing)


def _remote_revive(file_id: int, remote: RemoteFile) -> None:
    """A deleted file named again as a remote input: in use again, downloaded from the URL."""
    InputFile.objects.filter(id=file_id, file_delete_state=FileDeleteState.DONE).update(
        remote_url=remote.url, file_delete_state=FileDeleteState.INIT
    )


_URL = URLValidator(schemes=["http", "https"])


def remote_check(remote: RemoteFile) -> None:
    """A remote input's URL (http or https, at most 1,000 characters), MD5 (32 lowercase hex
    digits) and size (positive) are what a client can use, or WorkError says which is not."""
    try:
        _URL(remote.url)
    except ValidationError:
        raise WorkError(f"remote input: bad URL {remote.url[:80]!r} (http or https)") from None
    if len(remote.url) > 1000:
        raise WorkError("remote input: URL over 1,000 characters")
    if not re.fullmatch(r"[0-9a-f]{32}", remote.md5):
        raise WorkError(f"remote input: bad MD5 {remote.md5[:40]!r} (32 lowercase hex digits)")
    if not 1 <= remote.nbytes <= INT64_MAX:
        raise WorkError(f"remote input: nbytes must be between 1 and {INT64_MAX}")


def _deleted_message(name: str) -> str:
    return f"input file {name!r} was deleted from the download area; stage it again from a path"


def _copy_in(
    project: Project, source: Path, name: str, data: bytes, *, gz: bool, copied: list[Path] | None
) -> None:
    project.download_dir.mkdir(parents=True, exist_ok=True)
    target = project.download_dir / name
    if not target.exists():
        shutil.copyfile(source, target)
        if copied is not None:
            copied.append(target)
    if gz:
        # A fresh NAME.gz beside the file is what the download handler sends gzip-encoded.
        gz_target = target.with_name(target.name + ".gz")
        if not gz_target.exists():
            gz_target.write_bytes(gzip.compress(data, mtime=0))
            if copied is not None:
                copied.append(gz_target)


def _needed_again(f: InputFile, *, restored: bool = False) -> InputFile:
    """A file a new workunit uses is no longer the file deleter's.

    READY goes back to INIT only if it is still READY: a deleter that removed the file since
    ``f`` was read has made it DONE, which must stay visible (create_work's recheck then
    copies the file in again or refuses the job). DONE goes back to INIT only when the
    file was ``restored``, copied in again just now.
    """
    if f.file_delete_state != FileDeleteState.INIT:
        states = [FileDeleteState.READY, *([FileDeleteState.DONE] if restored else [])]
        InputFile.objects.filter(id=f.id, file_delete_state__in=states).update(
            file_delete_state=FileDeleteState.INIT
        )
        f.refresh_from_db(fields=["file_delete_state"])
    return f


def _inputs_recheck(project: Project, inputs: list[tuple[InputSpec, InputFile]], copied: list[Path]) -> None:
    """Hold the new workunits' input files against the file deleter, then copy in again any
    it removed meanwhile (or refuse the job if it names one without a path).

    FOR KEY SHARE on PostgreSQL: the deleter's FOR UPDATE waits for this transaction and then
    sees the new references; one that locked a file first is waited for here, and its DONE is
    read. (The references' own foreign-key check would lock only at commit: it is deferred.)
    Other creators sharing a file are not held up. The rows are locked in id order.
    """
    ids = sorted({f.id for _, f in inputs})
    deleted: set[int] = set()
    for start in range(0, len(ids), BULK_ROWS):
        rows = input_file_states_key_shared(ids[start : start + BULK_ROWS])
        deleted |= {file_id for file_id, state in rows if state == FileDeleteState.DONE}
    for spec, f in inputs:
        if f.id not in deleted:
            continue
        deleted.discard(f.id)
        if spec.remote is not None:
            _remote_revive(f.id, spec.remote)
            continue
        if spec.path is None:
            raise WorkError(_deleted_message(f.name))
        _copy_in(project, spec.path, f.name, spec.path.read_bytes(), gz=f.gzip, copied=copied)
        InputFile.objects.filter(id=f.id).update(file_delete_state=FileDeleteState.INIT)


def _check_bounds(values: dict[str, float | int], *, app: App, job: JobSpec) -> None:
    """The first rule ``values`` break, saying which values were the app's defaults: the
    operator then knows to correct the app (or give the value per job), not the job."""
    problems = job_bounds_problems(values)
    if not problems:
        return
    problem = problems[0]
    defaults = [f for f in problem.fields if f in JOB_DEFAULT_FIELDS and getattr(job, f) is None]
    if not defaults:
        raise WorkError(problem.message)
    shown = " and ".join(f"{f}={values[f]}" for f in defaults)
    verb, them = ("comes", "it") if len(defaults) == 1 else ("come", "them")
    raise WorkError(
        f"{problem.message} ({shown} {verb} from app {app.name!r}'s job defaults: "
        f"correct the app, or give {them} for the job)"
    )


def _job_check(job: JobSpec, name: str) -> None:
    """What a job carries besides the numbers of _check_bounds: names, text, integer ranges."""
    name_check("workunit", name, max_bytes=MAX_WORKUNIT_NAME_BYTES)
    text_check("command_line", job.command_line)
    if not -INT32_MAX - 1 <= job.priority <= INT32_MAX:
        raise WorkError(f"priority must be between {-INT32_MAX - 1} and {INT32_MAX}")
    if not 0 <= job.batch <= INT32_MAX:
        raise WorkError(f"batch must be between 0 and {INT32_MAX}")
    seen: set[str] = set()
    for spec in job.inputs:
        open_name = spec.open_name or spec.name or (spec.path.name if spec.path else "")
        name_check("input open", open_name, hidden_ok=True)
        if open_name in seen:
            raise WorkError(f"two inputs of workunit {name!r} open as {open_name!r}")
        seen.add(open_name)
    for output in job.outputs:
        if output.open_name:  # empty: the client opens the file under its own name
            name_check("output open", output.open_name, hidden_ok=True)
        if not 1 <= output.max_nbytes <= INT64_MAX:
            raise WorkError(f"output {output.open_name!r}: max_nbytes must be between 1 and {INT64_MAX}")


def _resolve(app: App, job: JobSpec) -> dict[str, float | int]:
    def pick(value: float | int | None, default: float | int) -> float | int:
        return default if value is None else value

    # An adaptive app's workunits start with one result; the scheduler raises a workunit
    # to the app's min_quorum and target_nresults when it sends it to an untrusted host.
    quorum, app_target = (1, 1) if app.adaptive_replication else (app.min_quorum, app.target_nresults)
    target = pick(job.target_nresults, app_target)
    return {
        "rsc_fpops_est": pick(job.rsc_fpops_est, DEFAULT_FPOPS_EST),
        "rsc_fpops_bound": pick(job.rsc_fpops_bound, DEFAULT_FPOPS_BOUND),
        "rsc_memory_bound": pick(job.rsc_memory_bound, DEFAULT_MEMORY_BOUND),
        "rsc_disk_bound": pick(job.rsc_disk_bound, DEFAULT_DISK_BOUND),
        "delay_bound": pick(job.delay_bound, app.delay_bound),
        "min_quorum": pick(job.min_quorum, quorum),
        "target_nresults": target,
        "max_error_results": pick(job.max_error_results, app.max_error_results),
        "max_total_results": pick(
            job.max_total_results, max(app.max_total_results, app.target_nresults, target)
        ),
        "max_success_results": pick(job.max_success_results, app.max_success_results),
    }


def result_create(*, workunit: Workunit, name: str, server_state: ServerState = ServerState.UNSENT) -> Result:
    """A result of ``workunit`` with its output files (from the workunit's specs); UNSENT unless
    told otherwise (sequence steps are INACTIVE until the sequence source sends them)."""
    result = Result.objects.create(
        project_id=workunit.project_id,
        app_id=workunit.app_id,
        workunit=workunit,
        name=name,
        priority=workunit.priority,
        server_state=server_state,
    )
    upload_key = workunit.project.upload_private_key
    OutputFile.objects.bulk_create(
        OutputFile(result=result, **_output_values(name, i, spec, upload_key))
        for i, spec in enumerate(workunit.output_files)
    )
    return result


def _output_values(result_name: str, ordinal: int, spec: dict[str, Any], upload_key: str) -> dict[str, Any]:
    """An output file's fields from its spec (the workunit's output template entry), in
    ``_OUTPUT_VARYING``'s order."""
    name = f"{result_name}_{ordinal}"
    max_nbytes = int(spec.get("max_nbytes", 1_000_000))
    return {
        "name": name,
        "open_name": spec.get("open_name", ""),
        "ordinal": ordinal,
        "max_nbytes": max_nbytes,
        "copy_file": bool(spec.get("copy_file", True)),
        "optional": bool(spec.get("optional", False)),
        "gzip_when_done": bool(spec.get("gzip_when_done", False)),
        "upload": bool(spec.get("upload", True)),
        "sticky": bool(spec.get("sticky", False)),
        # Signed here, off the scheduler's hot path: the certificate never changes.
        "xml_signature": sign_upload_certificate(upload_key, name, max_nbytes) if upload_key else "",
    }


# The columns results_create gives each row; every other column takes its field's default.
_RESULT_VARYING = ("project", "app", "workunit", "name", "priority", "server_state")
_OUTPUT_VARYING = (
    "result",
    "name",
    "open_name",
    "ordinal",
    "max_nbytes",
    "copy_file",
    "optional",
    "gzip_when_done",
    "upload",
    "sticky",
    "xml_signature",
)


def results_create(
    *,
    new: Sequence[tuple[Workunit, str]],
    server_state: ServerState = ServerState.UNSENT,
    upload_keys: Mapping[int, str] | None = None,
    batch: WriteBatch | None = None,
) -> list[int]:
    """``result_create`` for many (workunit, name) pairs at once; their ids, in order.

    The results are one INSERT (on PostgreSQL its rows travel as arrays, so the statement
    has one shape whatever their number) and their output files another; with ``batch`` the
    output files wait there until ``batch.flush()``. Each workunit needs its id, project,
    app, priority and output_files loaded. ``upload_keys`` (project id -> upload private key)
    saves reading the keys of the workunits' projects.
    """
    if not new:
        return []
    if upload_keys is None:
        upload_keys = _upload_keys({wu.project_id for wu, _name in new})
    state = int(server_state)
    rows = [(wu.project_id, wu.app_id, wu.id, name, wu.priority, state) for wu, name in new]
    returned = rows_insert(Result, _RESULT_VARYING, rows, returning=("id", "project_id", "name"))
    ids_by_name = {(project_id, name): rid for rid, project_id, name in returned}
    ids = [ids_by_name[(wu.project_id, name)] for wu, name in new]
    files = [
        (rid, *_output_values(name, i, spec, upload_keys.get(wu.project_id, "")).values())
        for (wu, name), rid in zip(new, ids, strict=True)
        for i, spec in enumerate(wu.output_files)
    ]
    if files:
        rows_insert(OutputFile, _OUTPUT_VARYING, files, batch=batch)
    return ids


def _upload_keys(project_ids: set[int]) -> dict[int, str]:
    return dict(Project.objects.filter(id__in=project_ids).values_list("id", "upload_private_key"))


def workunit_create(
    *, project: Project, app: App, job: JobSpec, now: datetime | None = None, create_results: bool = True
) -> Workunit:
    """Create one workunit and its first ``target_nresults`` results in one transaction."""
    jobs = workunits_create(project=project, app=app, jobs=[job], now=now, create_results=create_results)
    return jobs[0]


# Rows per INSERT (and ids per lock query): well within every database's parameter limit.
BULK_ROWS = 500


def workunits_create(
    *,
    project: Project,
    app: App,
    jobs: list[JobSpec],
    now: datetime | None = None,
    create_results: bool = True,
    progress: Callable[[int], object] | None = None,
) -> list[Workunit]:
    """Create many workunits atomically: either all are created or none (and no file is left).

    ``progress`` is called with 1 after each job is checked and its inputs staged (a
    command's progress line); the rows are then inserted in bulk."""
    if app.project_id != project.id:
        raise WorkError(f"app {app.name!r} does not belong to project {project.slug}")
    if app.deprecated:
        raise WorkError(f"app {app.name!r} is deprecated")
    now = now or clock.now()
    names = [job.name or _default_name(app, now, n) for n, job in enumerate(jobs)]
    _names_unique(names)
    missing = targets_missing(project, [job.target for job in jobs if job.target is not None])
    if missing:
        raise WorkError(missing)
    created: list[Workunit] = []
    copied: list[Path] = []
    staged: dict[tuple[str, Path | None], InputFile] = {}
    try:
        with transaction.atomic():
            prepared = []
            for job, name in zip(jobs, names, strict=True):
                prepared.append(_prepare_one(project, app, job, name, now, copied, staged))
                if progress is not None:
                    progress(1)
            # One INSERT per few thousand workunits and their file references, not one each.
            created = Workunit.objects.bulk_create([wu for wu, _ in prepared], batch_size=BULK_ROWS)
            WorkunitFileRef.objects.bulk_create(
                (
                    WorkunitFileRef(
                        workunit=wu,
                        file=f,
                        open_name=spec.open_name or f.name,
                        copy_file=spec.copy_file,
                        ordinal=i,
                    )
                    for wu, (job, (_, inputs)) in zip(created, zip(jobs, prepared, strict=True), strict=True)
                    for i, (spec, f) in enumerate(zip(job.inputs, inputs, strict=True))
                ),
                batch_size=BULK_ROWS,
            )
            _inputs_recheck(
                project,
                [
                    (spec, f)
                    for job, (_, inputs) in zip(jobs, prepared, strict=True)
                    for spec, f in zip(job.inputs, inputs, strict=True)
                ],
                copied,
            )
            assigned = [(wu, job.target) for wu, job in zip(created, jobs, strict=True) if job.target]
            assignments_create(project=project, jobs=assigned)
            if create_results:
                # All the first results in one INSERT (and their output files in another); the
                # scheduler makes those of targeted and broadcast jobs when it sends them.
                results_create(
                    new=[
                        (wu, f"{wu.name}_{i}")
                        for wu, job in zip(created, jobs, strict=True)
                        if job.target is None
                        for i in range(wu.target_nresults)
                    ],
                    upload_keys={project.id: project.upload_private_key},
                )
    except IntegrityError as exc:
        _remove(copied)
        raise WorkError(_integrity_message(project, names, exc)) from exc
    except BaseException:
        _remove(copied)
        raise
    if len(created) >= ANALYZE_AFTER:
        analyze_tables(Workunit, Result)
    return created


def _default_name(app: App, now: datetime, n: int) -> str:
    return f"{app.name}_{int(now.timestamp())}_{n}"


def _names_unique(names: list[str]) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise WorkError(f"workunit name {name!r} appears twice in this batch")
        seen.add(name)


def _integrity_message(project: Project, names: list[str], exc: IntegrityError) -> str:
    """Which name the database refused (read after the rollback, so only on this path)."""
    chunk = 500  # within any database's limit on query parameters
    for start in range(0, len(names), chunk):
        taken = (
            Workunit.objects.filter(project=project, name__in=names[start : start + chunk])
            .values_list("name", flat=True)
            .first()
        )
        if taken is not None:
            return f"a workunit named {taken!r} already exists in this project"
    return f"a workunit with that name already exists ({exc})"


def _locality_file(project: Project, wu_name: str, inputs: list[InputFile]) -> str:
    """Locality scheduling: a workunit named FILENAME__* uses the large file FILENAME, which is made
    sticky and report_on_rpc; large-file names may not contain '__'."""
    for staged in inputs:
        if "__" in staged.name and (staged.sticky or wu_name.startswith(staged.name)):
            raise WorkError(
                f"locality file name {staged.name!r} contains '__', which locality scheduling forbids"
            )
    if "__" not in wu_name:
        return ""
    file_name = file_name_of_workunit(wu_name) or ""
    try:
        validate_locality_file_name(file_name)
    except ValueError as exc:
        raise WorkError(f"workunit {wu_name!r}: {exc}") from exc
    large = next((f for f in inputs if f.name == file_name), None)
    if large is None:
        raise WorkError(
            f"workunit {wu_name!r} must use an input file named {file_name!r} (FILENAME__* naming)"
        )
    if not (large.sticky and large.report_on_rpc):
        large.sticky = large.report_on_rpc = True
        large.save(update_fields=["sticky", "report_on_rpc"])
    return file_name


def _remove(paths: list[Path]) -> None:
    for path in paths:
        path.unlink(missing_ok=True)


def _prepare_one(
    project: Project,
    app: App,
    job: JobSpec,
    name: str,
    now: datetime,
    copied: list[Path],
    staged: dict[tuple[str, Path | None], InputFile],
) -> tuple[Workunit, list[InputFile]]:
    """The job's workunit, checked and not yet saved, and its staged input files."""
    values = _resolve(app, job)
    _check_bounds(values, app=app, job=job)
    _job_check(job, name)
    extra = dict(job.extra)
    if job.target is not None:
        if "transitioner_flags" in extra or "sequence_id" in extra:
            raise WorkError(f"workunit {name!r}: a work-sequence step cannot be targeted or broadcast")
        extra["transitioner_flags"] = transitioner_flags_for(job.target)
    inputs = [_staged(project, spec, copied, staged) for spec in job.inputs]
    locality_file = _locality_file(project, name, inputs) if project.locality_scheduling else ""
    wu = Workunit(
        project=project,
        app=app,
        name=name,
        create_time=now,
        batch=job.batch,
        priority=job.priority,
        command_line=job.command_line,
        output_files=[asdict(spec) for spec in job.outputs],
        locality_file_name=locality_file,
        transition_time=now,
        **values,
        **extra,
    )
    return wu, inputs


def _staged(
    project: Project, spec: InputSpec, copied: list[Path], staged: dict[tuple[str, Path | None], InputFile]
) -> InputFile:
    """input_file_stage once per file of a call: jobs of a batch often share their inputs."""
    key = (spec.name or (spec.path.name if spec.path is not None else ""), spec.path)
    if key not in staged:
        staged[key] = input_file_stage(project=project, spec=spec, copied=copied)
    return staged[key]
