"""BOINC's workunit and result rows still in progress, with their input and output files."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from apps.applications.domain.job_bounds import job_bounds_problems
from apps.boinc_import.domain.hosts import VersionRef
from apps.boinc_import.domain.ids import IdMap
from apps.boinc_import.domain.values import (
    INT32_MAX,
    SMALLINT_MAX,
    Mapped,
    Row,
    RowRefused,
    deadline,
    described,
    file_name_check,
    fitted,
    flag,
    integer,
    number,
    text,
    unix_time,
)
from apps.core.domain.resources import ANONYMOUS_CODES, ProcType
from apps.protocol import StoredDoc
from apps.work.domain.assignments import TargetType
from apps.work.domain.states import (
    AssimilateState,
    ClientState,
    FileDeleteState,
    Outcome,
    ServerState,
    ValidateState,
)

MD5_HEX_LEN = 32
ANONYMOUS_PLATFORM = "anonymous"
_ANONYMOUS_TYPES = {code: proc for proc, code in ANONYMOUS_CODES.items()}
# Workunits BOINC has finished with: assimilated. Their results are history, not work.
FINISHED_WORKUNIT_SQL = f"assimilate_state = {AssimilateState.DONE.value}"


@dataclass(frozen=True, slots=True)
class InputRef:
    """An input file of a workunit: the file (shared by workunits) and this use of it."""

    name: str
    md5_cksum: str
    nbytes: int
    sticky: bool
    no_delete: bool
    gzip: bool
    open_name: str
    copy_file: bool
    optional: bool
    download_urls: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class OutputRef:
    """An output file of a result (or the spec new results of the workunit get)."""

    name: str
    open_name: str
    max_nbytes: int
    copy_file: bool
    optional: bool
    gzip_when_done: bool
    sticky: bool
    reported_nbytes: int
    reported_md5: str


def map_workunit(
    row: Row, *, now: float, apps: dict[int, int], versions: dict[int, VersionRef], doc: StoredDoc
) -> Mapped:
    """A workunit not yet assimilated, with its input files from xml_doc."""
    appid = integer(row, "appid")
    if appid not in apps:
        raise RowRefused(f"its app {appid} was not imported")
    numbers = {
        "rsc_fpops_est": number(row, "rsc_fpops_est"),
        "rsc_fpops_bound": number(row, "rsc_fpops_bound"),
        "rsc_memory_bound": number(row, "rsc_memory_bound"),
        "rsc_disk_bound": number(row, "rsc_disk_bound"),
        "rsc_bandwidth_bound": number(row, "rsc_bandwidth_bound"),
        "delay_bound": float(integer(row, "delay_bound")),
        "min_quorum": integer(row, "min_quorum"),
        "target_nresults": integer(row, "target_nresults"),
        "max_error_results": integer(row, "max_error_results"),
        "max_total_results": integer(row, "max_total_results"),
        "max_success_results": integer(row, "max_success_results"),
    }
    problems = job_bounds_problems(numbers)
    if problems:
        raise RowRefused("; ".join(p.message for p in problems))
    notes: list[str] = []
    app_version_id = None
    homogeneous = integer(row, "app_version_id", lo=-(2**31))
    if homogeneous > 0:
        version = versions.get(homogeneous)
        if version is None:
            notes.append(
                f"its homogeneous app version {homogeneous} was not imported; any version may run it"
            )
        else:
            app_version_id = version.id
    parts = doc.workunits
    values = {
        "app_id": apps[appid],
        "name": text(row, "name", max_len=254, required=True),
        "create_time": unix_time(row, "create_time", now=now, required=True),
        "batch": integer(row, "batch"),
        "priority": integer(row, "priority", lo=-(2**31)),
        "command_line": fitted(parts[0].command_line if parts else "", "command_line", 1000),
        **numbers,
        "need_validate": flag(row, "need_validate"),
        "canonical_credit": number(row, "canonical_credit"),
        "transition_time": deadline(row, "transition_time"),
        "error_mask": integer(row, "error_mask"),
        "file_delete_state": _state(row, "file_delete_state", FileDeleteState),
        "assimilate_state": _state(row, "assimilate_state", AssimilateState),
        "transitioner_flags": integer(row, "transitioner_flags", hi=SMALLINT_MAX),
        "keywords": described(row, "keywords", max_len=200, notes=notes),
        "app_version_id": app_version_id,
        "hr_class": integer(row, "hr_class"),
    }
    return Mapped(values, notes, files=input_files(doc))


def input_files(doc: StoredDoc) -> list[InputRef]:
    """The workunit's input files, in file_ref order, each with its size and MD5."""
    infos = {info.name: info for info in doc.file_infos}
    refs = doc.workunits[0].file_refs if doc.workunits else ()
    files = []
    for ref in refs:
        info = infos.get(ref.file_name)
        if info is None:
            raise RowRefused(f"xml_doc: file_ref {ref.file_name!r} has no file_info")
        file_name_check(info.name)
        if not info.md5_cksum or len(info.md5_cksum) != MD5_HEX_LEN or info.nbytes is None:
            raise RowRefused(f"xml_doc: input file {info.name!r} lacks its md5_cksum or nbytes")
        files.append(
            InputRef(
                name=info.name,
                md5_cksum=info.md5_cksum.lower(),
                nbytes=int(info.nbytes),
                sticky=info.sticky,
                no_delete=info.no_delete,
                gzip=bool(info.gzipped_urls),
                open_name=fitted(ref.open_name or info.name, "open_name", 254),
                copy_file=ref.copy_file,
                optional=ref.optional,
                download_urls=info.download_urls,
            )
        )
    if len(files) > SMALLINT_MAX:
        raise RowRefused(f"xml_doc lists {len(files)} input files")
    return files


def output_files(doc_in: StoredDoc, doc_out: StoredDoc | None = None) -> list[OutputRef]:
    """A result's output files from xml_doc_in (the server's), with the size and MD5 the
    client reported in xml_doc_out, if it has reported."""
    reported = {info.name: info for info in doc_out.file_infos} if doc_out else {}
    refs = {ref.file_name: ref for part in doc_in.results for ref in part.file_refs}
    files = []
    for info in doc_in.file_infos:
        file_name_check(info.name)
        if not info.max_nbytes or info.max_nbytes <= 0:
            raise RowRefused(f"xml_doc_in: output file {info.name!r} has no max_nbytes")
        ref = refs.get(info.name)
        sent = reported.get(info.name)
        files.append(
            OutputRef(
                name=info.name,
                open_name=fitted(ref.open_name if ref else "", "open_name", 254),
                max_nbytes=int(info.max_nbytes),
                copy_file=ref.copy_file if ref else True,
                optional=ref.optional if ref else False,
                gzip_when_done=info.gzip_when_done,
                sticky=info.sticky,
                reported_nbytes=int(sent.nbytes or 0) if sent else 0,
                reported_md5=(sent.md5_cksum or "")[:MD5_HEX_LEN] if sent else "",
            )
        )
    if len({f.name for f in files}) != len(files):
        raise RowRefused("xml_doc_in lists an output file twice")
    return files


def map_result(
    row: Row,
    *,
    now: float,
    workunits: IdMap,
    hosts: IdMap,
    users: IdMap,
    apps: dict[int, int],
    versions: dict[int, VersionRef],
    outputs: list[OutputRef],
) -> Mapped:
    """A result of an imported workunit, with its output files (see output_files)."""
    wuid = integer(row, "workunitid")
    workunit_id = workunits.target(wuid)
    if workunit_id is None:
        raise RowRefused(f"its workunit {wuid} was not imported")
    appid = integer(row, "appid")
    if appid not in apps:
        raise RowRefused(f"its app {appid} was not imported")
    notes: list[str] = []
    server_state = _state(row, "server_state", ServerState)
    values = {
        "workunit_id": workunit_id,
        "app_id": apps[appid],
        "name": text(row, "name", max_len=254, required=True),
        "create_time": unix_time(row, "create_time", now=now, required=True),
        "priority": integer(row, "priority", lo=-(2**31)),
        "server_state": server_state,
        "outcome": _state(row, "outcome", Outcome),
        "client_state": _state(row, "client_state", ClientState),
        "validate_state": _state(row, "validate_state", ValidateState),
        "file_delete_state": _state(row, "file_delete_state", FileDeleteState),
        "host_id": _owner(row, "hostid", hosts, "host", server_state, notes),
        "account_id": _owner(row, "userid", users, "user", server_state, notes),
        "sent_time": unix_time(row, "sent_time", now=now),
        "report_deadline": deadline(row, "report_deadline"),
        "received_time": unix_time(row, "received_time", now=now),
        "flops_estimate": number(row, "flops_estimate"),
        "exit_status": integer(row, "exit_status", lo=-(2**31), hi=INT32_MAX),
        "cpu_time": number(row, "cpu_time"),
        "elapsed_time": number(row, "elapsed_time"),
        "stderr_out": _stderr(row),
        "peak_working_set_size": number(row, "peak_working_set_size"),
        "claimed_credit": number(row, "claimed_credit"),
        "granted_credit": number(row, "granted_credit"),
        "runtime_outlier": flag(row, "runtime_outlier"),
        **_version(row, versions, notes),
    }
    return Mapped(values, notes, files=outputs)


def _owner(row: Row, column: str, ids: IdMap, what: str, server_state: int, notes: list[str]) -> int | None:
    source = integer(row, column)
    if not source:
        return None
    target = ids.target(source)
    if target is None and server_state == ServerState.IN_PROGRESS:
        notes.append(
            f"its {what} {source} was not imported: its report will be refused and the task sent again"
        )
    return target


def _version(row: Row, versions: dict[int, VersionRef], notes: list[str]) -> dict[str, object]:
    """The app version a result ran (or was sent) with: a version, or anonymous platform."""
    avid = integer(row, "app_version_id", lo=-(2**31))
    none: dict[str, object] = {
        "app_version_id": None,
        "anonymous_proc_type": "",
        "platform": "",
        "version_num": 0,
        "plan_class": "",
        "proc_type": "",
        "avg_ncpus": 0.0,
        "gpu_usage": 0.0,
    }
    if avid > 0:
        version = versions.get(avid)
        if version is None:
            notes.append(f"its app version {avid} was not imported")
            return none
        return {
            "app_version_id": version.id,
            "anonymous_proc_type": "",
            "platform": version.platform,
            "version_num": version.version_num,
            "plan_class": version.plan_class,
            "proc_type": version.proc_type,
            "avg_ncpus": version.avg_ncpus,
            "gpu_usage": version.gpu_usage,
        }
    proc = _ANONYMOUS_TYPES.get(avid)
    if proc is None:
        return none
    return {
        **none,
        "anonymous_proc_type": proc.value,
        "platform": ANONYMOUS_PLATFORM,
        "proc_type": proc.value,
        "avg_ncpus": 1.0 if proc is ProcType.CPU else 0.0,
    }


def _stderr(row: Row) -> str:
    """stderr_out is the client's copy of the app's output: bytes that are not UTF-8 are
    replaced rather than refusing the result (the scheduler does the same with reports)."""
    value = row["stderr_out"]
    if isinstance(value, bytes | bytearray):
        value = bytes(value).decode("utf-8", errors="replace")
    return (value or "").replace("\x00", "")


_VALUES: dict[type, frozenset[int]] = {
    enum: frozenset(member.value for member in enum)
    for enum in (ServerState, Outcome, ClientState, ValidateState, FileDeleteState, AssimilateState)
}


def _state(row: Row, column: str, enum: type) -> int:
    value = integer(row, column, lo=-(2**31))
    if value not in _VALUES[enum]:
        raise RowRefused(f"{column} = {value} is not one of BOINC's values")
    return value


def map_assignment(
    row: Row, *, now: float, workunits: IdMap, hosts: IdMap, users: IdMap, teams: IdMap
) -> Mapped:
    """A targeted or broadcast job's assignment, its workunit and target mapped to their
    imported rows (a target that was not imported would send the job to the wrong host)."""
    wuid = integer(row, "workunitid")
    workunit_id = workunits.target(wuid)
    if workunit_id is None:
        raise RowRefused(f"its workunit {wuid} was not imported")
    try:
        kind = TargetType(integer(row, "target_type"))
    except ValueError:
        raise RowRefused(f"target_type {row['target_type']} is none of BOINC's (0 to 3)") from None
    multi = flag(row, "multi")
    source = integer(row, "target_id")
    if kind is TargetType.NONE:
        if not multi:
            raise RowRefused("a targeted job with no host, user or team is never sent (BOINC sends none)")
        target_id = 0
    else:
        ids = {TargetType.HOST: hosts, TargetType.USER: users, TargetType.TEAM: teams}[kind]
        found = ids.target(source)
        if found is None:
            raise RowRefused(f"its target {kind.name.lower()} {source} was not imported")
        target_id = found
    values = {
        "workunit_id": workunit_id,
        "target_type": int(kind),
        "target_id": target_id,
        "multi": multi,
        "create_time": unix_time(row, "create_time", now=now) or datetime.fromtimestamp(now, UTC),
    }
    return Mapped(values, [])
