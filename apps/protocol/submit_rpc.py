"""BOINC's remote job submission RPCs (submit_rpc_handler.php and job_file.php): requests
read into plain values, replies written with BOINC's element names.

A request is one XML document in the POST field ``request``; its root names the call. A
reply's root is the call's name, and an error is ``<error><error_num/><error_msg/></error>``
inside it (BOINC's xml_error after xml_start_tag), so a client finds ``error`` among the
reply's children whatever it asked. Per-job templates (``<input_template>``,
``<output_template>``) are handed on as XML text for the template parsers.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from lxml import etree

from apps.protocol import numbers as num
from apps.protocol.errors import ProtocolError
from apps.protocol.xmlsafe import child_elements, leaf_text, parse_document
from apps.protocol.xmlwrite import Block, new_document, serialize, xml_safe_text

SUBMIT_CALLS = (
    "abort_batch",
    "abort_jobs",
    "create_batch",
    "estimate_batch",
    "get_templates",
    "ping",
    "query_batch",
    "query_batch2",
    "query_batches",
    "query_job",
    "query_completed_job",
    "retire_batch",
    "set_expire_time",
    "submit_batch",
)
JOB_FILE_CALLS = ("query_files", "upload_files")
MAX_REQUEST_BYTES = 64 * 1024 * 1024
# Elements of a request: a job is about a dozen, so this bounds a request's jobs too.
MAX_REQUEST_ELEMENTS = 2_000_000
_IN = "    "
_IN2 = _IN * 2

# The leaves read from a request's root, each at most once (the last one counts).
_LEAVES = (
    "authenticator",
    "app_name",
    "batch_id",
    "batch_name",
    "expire_time",
    "get_cpu_time",
    "get_job_details",
    "job_id",
    "job_name",
    "min_mod_time",
    "delete_time",
)
JOB_PARAMS = ("rsc_fpops_est", "rsc_fpops_bound", "rsc_memory_bound", "rsc_disk_bound", "delay_bound")


@dataclass(frozen=True, slots=True)
class InputFileDesc:
    mode: str
    source: str = ""
    url: str = ""
    nbytes: float = 0.0
    md5: str = ""


@dataclass(frozen=True, slots=True)
class JobDesc:
    name: str = ""
    rsc_fpops_est: float | None = None
    command_line: str = ""
    target_team: int = 0
    target_user: int = 0
    target_host: int = 0
    priority: int | None = None
    input_template: bytes | None = None
    output_template: bytes | None = None
    input_files: tuple[InputFileDesc, ...] = ()


@dataclass(frozen=True, slots=True)
class BatchDesc:
    app_name: str = ""
    batch_id: int = 0
    batch_name: str = ""
    app_version_num: int = 0
    allocation_priority: bool = False
    priority: int | None = None
    job_params: dict[str, float] = field(default_factory=dict)
    input_template_filename: str = ""
    output_template_filename: str = ""
    jobs: tuple[JobDesc, ...] = ()


@dataclass(frozen=True, slots=True)
class SubmitRequest:
    call: str
    leaves: dict[str, str] = field(default_factory=dict)
    job_names: tuple[str, ...] = ()
    batch_names: tuple[str, ...] = ()
    phys_names: tuple[str, ...] = ()
    batch: BatchDesc | None = None

    @property
    def authenticator(self) -> str:
        return self.leaves.get("authenticator", "").strip()

    def text(self, name: str) -> str:
        return self.leaves.get(name, "").strip()

    def integer(self, name: str) -> int:
        """PHP's (int) of an element: 0 when absent or empty."""
        value = self.text(name)
        return num.check_int(num.parse_int(value, name), name, -(2**63), 2**63 - 1) if value else 0

    def number(self, name: str) -> float:
        value = self.text(name)
        return num.parse_float(value, name) if value else 0.0


def parse_submit_request(body: bytes, *, calls: Sequence[str] = SUBMIT_CALLS, max_jobs: int) -> SubmitRequest:
    """Read a request; ProtocolError for malformed or hostile XML, an unknown call, or more
    than ``max_jobs`` jobs."""
    root = parse_document(
        body, root=tuple(calls), max_bytes=MAX_REQUEST_BYTES, max_elements=MAX_REQUEST_ELEMENTS
    )
    leaves: dict[str, str] = {}
    lists: dict[str, list[str]] = {"job_name": [], "batch_name": [], "phys_name": []}
    batch = None
    for child in child_elements(root):
        tag = child.tag
        if tag == "batch":
            batch = _batch(child, max_jobs)
            continue
        if tag in lists:
            lists[tag].append(leaf_text(child).strip())
        if tag in _LEAVES:
            leaves[tag] = leaf_text(child)
    return SubmitRequest(
        call=str(root.tag),
        leaves=leaves,
        job_names=tuple(lists["job_name"]),
        batch_names=tuple(lists["batch_name"]),
        phys_names=tuple(lists["phys_name"]),
        batch=batch,
    )


def _float(element: etree._Element, where: str) -> float:
    text = leaf_text(element).strip()
    return num.parse_float(text, where) if text else 0.0


def _int(element: etree._Element, where: str) -> int:
    text = leaf_text(element).strip()
    return num.check_int(num.parse_int(text, where), where, -(2**31), 2**31 - 1) if text else 0


def _batch(element: etree._Element, max_jobs: int) -> BatchDesc:
    values: dict[str, object] = {}
    params: dict[str, float] = {}
    jobs: list[JobDesc] = []
    for child in child_elements(element):
        tag = child.tag
        if tag == "job":
            if len(jobs) >= max_jobs:
                raise ProtocolError(f"more than {max_jobs} jobs in one request")
            jobs.append(_job(child, len(jobs)))
        elif tag in ("app_name", "batch_name", "input_template_filename", "output_template_filename"):
            values[tag] = leaf_text(child).strip()
        elif tag in ("batch_id", "app_version_num") or tag == "priority":
            values[tag] = _int(child, tag)
        elif tag == "allocation_priority":
            values[tag] = num.parse_bool(leaf_text(child), tag)
        elif tag == "job_params":
            # BOINC's C++ client writes every parameter, 0 for "not given".
            for p in child_elements(child):
                if p.tag in JOB_PARAMS and leaf_text(p).strip():
                    value = _float(p, f"job_params/{p.tag}")
                    if value:
                        params[str(p.tag)] = value
    return BatchDesc(job_params=params, jobs=tuple(jobs), **values)  # type: ignore[arg-type]


def _job(element: etree._Element, index: int) -> JobDesc:
    where = f"job {index}"
    values: dict[str, object] = {}
    files: list[InputFileDesc] = []
    for child in child_elements(element):
        tag = child.tag
        if tag in ("name", "command_line"):
            values[tag] = leaf_text(child).strip() if tag == "name" else leaf_text(child)
        elif tag == "rsc_fpops_est":
            if leaf_text(child).strip():
                values[tag] = _float(child, f"{where}: rsc_fpops_est")
        elif tag in ("target_team", "target_user", "target_host", "priority"):
            if leaf_text(child).strip():
                values[tag] = _int(child, f"{where}: {tag}")
        elif tag in ("input_template", "output_template"):
            values[tag] = etree.tostring(child, encoding="utf-8", with_tail=False)
        elif tag == "input_file":
            files.append(_input_file(child, where))
    return JobDesc(input_files=tuple(files), **values)  # type: ignore[arg-type]


def _input_file(element: etree._Element, where: str) -> InputFileDesc:
    values: dict[str, object] = {}
    for child in child_elements(element):
        tag = child.tag
        if tag in ("mode", "url", "md5"):
            values[tag] = leaf_text(child).strip()
        elif tag == "source":
            values[tag] = leaf_text(child)  # inline contents keep their spaces
        elif tag == "nbytes":
            values[tag] = _float(child, f"{where}: nbytes")
    if not values.get("mode"):
        raise ProtocolError(f"{where}: input_file without a mode")
    return InputFileDesc(**values)  # type: ignore[arg-type]


# --- replies ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BatchInfo:
    id: int
    create_time: float
    expire_time: float
    est_completion_time: float
    njobs: int
    fraction_done: float
    nerror_jobs: int
    state: int
    completion_time: float
    credit_estimate: float
    credit_canonical: float
    name: str
    app_name: str
    total_cpu_time: float | None = None


@dataclass(frozen=True, slots=True)
class JobInfo:
    id: int
    name: str
    canonical_instance_id: int
    # With details: error names, exit statuses of errored tasks, the canonical CPU time, status.
    errors: tuple[str, ...] = ()
    exit_statuses: tuple[int, ...] = ()
    cpu_time: float | None = None
    status: str | None = None


@dataclass(frozen=True, slots=True)
class InstanceInfo:
    name: str
    id: int
    state: str
    outfile_sizes: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class CompletedJob:
    error_mask: int
    canonical_resultid: int = 0
    error_resultid: int = 0
    exit_status: int | None = None
    elapsed_time: float = 0.0
    cpu_time: float = 0.0
    stderr_out: str = ""


def _f(value: float) -> str:
    return num.format_float(value, client=False)


def _i(value: int) -> str:
    return num.format_int(value)


def render_error_reply(call: str | None, error_num: int, message: str) -> bytes:
    """BOINC's xml_error: ``<error>`` inside the call's root, or alone when the request named
    no known call."""
    message = xml_safe_text(message)
    if call not in SUBMIT_CALLS + JOB_FILE_CALLS:
        doc = new_document("error")
        doc.leaf("error_num", _i(error_num), _IN)
        doc.leaf("error_msg", message, _IN)
        return serialize(doc)
    doc = new_document(call)
    with doc.block("error", _IN, _IN) as error:
        error.leaf("error_num", _i(error_num), _IN2)
        error.leaf("error_msg", message, _IN2)
    return serialize(doc)


def render_leaves(call: str, leaves: Sequence[tuple[str, str]]) -> bytes:
    """``<call><tag>value</tag>...</call>``: batch_id, seconds, success."""
    doc = new_document(call)
    for tag, value in leaves:
        doc.leaf(tag, value, _IN)
    return serialize(doc)


def render_success(call: str) -> bytes:
    return render_leaves(call, [("success", "1")])


def _batch_fields(block: Block, b: BatchInfo, indent: str) -> None:
    block.leaf("id", _i(b.id), indent)
    block.leaf("create_time", _f(b.create_time), indent)
    block.leaf("expire_time", _f(b.expire_time), indent)
    block.leaf("est_completion_time", _f(b.est_completion_time), indent)
    block.leaf("njobs", _i(b.njobs), indent)
    block.leaf("fraction_done", _f(b.fraction_done), indent)
    block.leaf("nerror_jobs", _i(b.nerror_jobs), indent)
    block.leaf("state", _i(b.state), indent)
    block.leaf("completion_time", _f(b.completion_time), indent)
    block.leaf("credit_estimate", _f(b.credit_estimate), indent)
    block.leaf("credit_canonical", _f(b.credit_canonical), indent)
    block.leaf("name", b.name, indent)
    block.leaf("app_name", b.app_name, indent)
    if b.total_cpu_time is not None:
        block.leaf("total_cpu_time", _f(b.total_cpu_time), indent)


def render_query_batches(batches: Sequence[BatchInfo]) -> bytes:
    doc = new_document("query_batches")
    for b in batches:
        with doc.block("batch", _IN, _IN) as block:
            _batch_fields(block, b, _IN2)
    return serialize(doc)


def render_query_batch(batch: BatchInfo, jobs: Sequence[JobInfo]) -> bytes:
    doc = new_document("query_batch")
    _batch_fields(doc, batch, _IN)
    for job in jobs:
        with doc.block("job", _IN, _IN) as block:
            block.leaf("id", _i(job.id), _IN2)
            block.leaf("name", job.name, _IN2)
            block.leaf("canonical_instance_id", _i(job.canonical_instance_id), _IN2)
            for error in job.errors:
                block.leaf("error", error, _IN2)
            for status in job.exit_statuses:
                block.leaf("exit_status", _i(status), _IN2)
            if job.cpu_time is not None:
                block.leaf("cpu_time", _f(job.cpu_time), _IN2)
            if job.status is not None:
                block.leaf("status", job.status, _IN2)
    return serialize(doc)


def render_query_batch2(server_time: float, batches: Sequence[Sequence[tuple[str, str]]]) -> bytes:
    """Per batch its size and each job's (name, status): DONE, ERROR, IN_PROGRESS, UNSENT."""
    doc = new_document("query_batch2")
    doc.leaf("server_time", _f(server_time), _IN)
    for jobs in batches:
        doc.leaf("batch_size", _i(len(jobs)), _IN)
        for name, status in jobs:
            with doc.block("job", _IN, _IN) as block:
                block.leaf("job_name", name, _IN2)
                block.leaf("status", status, _IN2)
    return serialize(doc)


def render_query_job(instances: Sequence[InstanceInfo]) -> bytes:
    doc = new_document("query_job")
    for inst in instances:
        with doc.block("instance", _IN, _IN) as block:
            block.leaf("name", inst.name, _IN2)
            block.leaf("id", _i(inst.id), _IN2)
            block.leaf("state", inst.state, _IN2)
            for size in inst.outfile_sizes:
                with block.block("outfile", _IN2, _IN2) as out:
                    out.leaf("size", _i(size), _IN2 + _IN)
    return serialize(doc)


def render_query_completed_job(job: CompletedJob) -> bytes:
    doc = new_document("query_completed_job")
    with doc.block("completed_job", _IN, _IN) as block:
        block.leaf("error_mask", _i(job.error_mask), _IN2)
        if job.canonical_resultid:
            block.leaf("canonical_resultid", _i(job.canonical_resultid), _IN2)
        elif job.error_resultid:
            block.leaf("error_resultid", _i(job.error_resultid), _IN2)
        if job.exit_status is not None:
            block.leaf("exit_status", _i(job.exit_status), _IN2)
            block.leaf("elapsed_time", _f(job.elapsed_time), _IN2)
            block.leaf("cpu_time", _f(job.cpu_time), _IN2)
            block.leaf("stderr_out", job.stderr_out, _IN2)
    return serialize(doc)


def render_templates(input_template: str, output_template: str) -> bytes:
    """The app's two templates inside ``<templates>``, as XML (each parsed, never pasted)."""
    doc = new_document("get_templates")
    with doc.block("templates", _IN, _IN) as block:
        block.inline(input_template)
        block.inline(output_template)
    return serialize(doc)


def render_absent_files(indexes: Sequence[int]) -> bytes:
    doc = new_document("query_files")
    with doc.block("absent_files", _IN, _IN) as block:
        for i in indexes:
            block.leaf("file", _i(i), _IN2)
    return serialize(doc)


def render_job_counts(counts: Sequence[tuple[str, int]]) -> bytes:
    """server_status.php?counts=1: ``<job_counts>`` with one leaf per count."""
    doc = new_document("job_counts")
    for tag, value in counts:
        doc.leaf(tag, _i(value), _IN)
    return serialize(doc)


_ROOT_RE = re.compile(rb"<\s*([A-Za-z_][A-Za-z0-9_]*)")


def request_call(body: bytes) -> str | None:
    """The call a request names (its first element), if it is one of the known calls: an
    error about a request that could not be read still goes inside the call's root."""
    match = _ROOT_RE.search(body[:4096])
    if match is None:
        return None
    name = match.group(1).decode("ascii")
    return name if name in SUBMIT_CALLS + JOB_FILE_CALLS else None
