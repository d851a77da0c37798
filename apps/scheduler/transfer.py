"""The file-transfer endpoints the BOINC client uses: downloads and file_upload_handler.

Downloads serve the project's download area by plain GET/HEAD, with
``Range: bytes=N-`` resume and, when the client accepts it and a fresh ``NAME.gz`` lies
beside the file, HTTP gzip encoding (curl decodes it, so the client's MD5 and size checks
still see the original bytes). Uploads stream the body: a size query, or an XML
header followed by raw bytes written at the client's offset into a hidden ``.NAME.part``
file that becomes the real file only when its size and MD5 match what the client declared.

Neither endpoint ever answers with a stack trace: a missing download is a logged 404 and
any upload failure is a ``<data_server_reply>`` (status 1 = try later, -1 = give up); an
unreachable database is answered by DatabaseOutageMiddleware (a 503, or status 1).
Both count their errors per project and hour as DaemonRun rows ("download"/"upload"),
which the admin lists under Daemon runs.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import IO, Protocol

from django.db.models import F
from django.http import (
    FileResponse,
    HttpRequest,
    HttpResponse,
    HttpResponseBase,
    HttpResponseNotAllowed,
    HttpResponseNotFound,
    StreamingHttpResponse,
)
from django.utils.http import http_date
from django.views.decorators.csrf import csrf_exempt

from apps.core import clock
from apps.core.domain.signing import file_md5_hex, verify_upload_certificate
from apps.core.metrics import upload_count
from apps.core.stages import stage
from apps.projects.models import DaemonRun, Project
from apps.protocol import (
    FileSizeQuery,
    ProtocolError,
    UploadRequest,
    UploadStatus,
    find_upload_header_end,
    is_safe_file_name,
    parse_upload_header,
    render_upload_reply,
)
from apps.protocol.filenames import partial_upload_name
from apps.scheduler.middleware import DATABASE_UNAVAILABLE
from apps.scheduler.queries import output_file_mark_uploaded, upload_target_row
from apps.scheduler.services.catalog import project_by_slug
from apps.work.domain.states import FileDeleteState, result_open_to_its_host

logger = logging.getLogger(__name__)

CHUNK = 64 * 1024
# The metrics' label for each <data_server_reply> status.
UPLOAD_STATUS_LABELS: dict[int, str] = {
    UploadStatus.OK: "ok",
    UploadStatus.TRANSIENT: "retry",
    UploadStatus.PERMANENT: "refused",
}
XML = "text/xml; charset=utf-8"


# --- error counting --------------------------------------------------------------------


def transfer_error_record(*, project: Project, kind: str, message: str, now: datetime) -> None:
    """Count one failed transfer in the project's hourly DaemonRun row for ``kind``.

    Best effort: a failure to count is logged, never turned into a failed transfer.
    """
    bucket = now.replace(minute=0, second=0, microsecond=0)
    try:
        run, _ = DaemonRun.objects.get_or_create(project=project, daemon=kind, started=bucket)
        DaemonRun.objects.filter(pk=run.pk).update(errors=F("errors") + 1, message=_printable(message) or "")
    except Exception:
        logger.exception("%s %s: could not record a transfer error", kind, project.slug)


# --- downloads -------------------------------------------------------------------------


class RangeNotSatisfiable(ValueError):
    """The Range header asks for bytes the file does not have (HTTP 416)."""


@dataclass(frozen=True, slots=True)
class ByteRange:
    start: int
    end: int  # inclusive

    @property
    def length(self) -> int:
        return self.end - self.start + 1


def byte_range(header: str, size: int) -> ByteRange | None:
    """The one range of a ``Range: bytes=...`` header, or None to send the whole file.

    Handles ``N-`` (what the client sends to resume), ``N-M`` and ``-N``; a header with
    several ranges or another unit is ignored (RFC 9110 allows sending the whole file).
    """
    unit, _, spec = header.strip().partition("=")
    if unit.strip().lower() != "bytes" or "," in spec:
        return None
    first, dash, last = spec.strip().partition("-")
    if not dash:
        return None
    try:
        if first == "":
            suffix = int(last)
            if suffix <= 0:
                raise RangeNotSatisfiable(header)
            return ByteRange(max(size - suffix, 0), size - 1) if size else None
        start = int(first)
        end = int(last) if last else size - 1
    except ValueError:
        return None
    if size == 0:
        return None  # nothing to cut; the (empty) whole file satisfies any range
    if start >= size:
        raise RangeNotSatisfiable(header)
    if end < start:
        return None
    return ByteRange(start, min(end, size - 1))


def accepts_gzip(header: str) -> bool:
    """True if an Accept-Encoding header allows gzip (curl sends "deflate, gzip, br, zstd")."""
    for item in header.split(","):
        coding, _, params = item.strip().partition(";")
        if coding.strip().lower() not in ("gzip", "x-gzip"):
            continue
        name, _, value = params.strip().partition("=")
        if name.strip().lower() != "q":
            return True
        try:
            return float(value) > 0
        except ValueError:
            return False
    return False


def download_path(project: Project, name: str) -> Path | None:
    """The file's path in the download area, or None if the name could leave it."""
    if not is_safe_file_name(name) or name.startswith("."):
        return None
    root = project.download_dir.resolve()
    path = (root / name).resolve()
    return path if path.parent == root else None


def download(request: HttpRequest, slug: str, name: str) -> HttpResponseBase:
    """GET/HEAD one file of the download area (app files and input files).

    A failure (database or disk) is a 503 the client retries, never a stack trace.
    """
    if request.method not in ("GET", "HEAD"):
        return HttpResponseNotAllowed(["GET", "HEAD"])
    try:
        return _download(request, slug, name)
    except DATABASE_UNAVAILABLE:
        raise  # the middleware's "project is down" answer
    except Exception:
        logger.exception("download %s: %r failed", slug, name)
        return HttpResponse(b"Try again later\n", content_type="text/plain", status=503)


def _download(request: HttpRequest, slug: str, name: str) -> HttpResponseBase:
    project = Project.objects.filter(slug=slug).first()
    if project is None:
        return HttpResponseNotFound(b"No such project\n", content_type="text/plain")
    path = download_path(project, name)
    if path is None or not path.is_file():
        why = "refused file name" if path is None else "missing file"
        logger.warning("download %s: %s %r for %s", slug, why, name, request.META.get("REMOTE_ADDR"))
        transfer_error_record(
            project=project, kind="download", message=f"{why}: {name[:200]}", now=clock.now()
        )
        return HttpResponseNotFound(b"File not found\n", content_type="text/plain")
    return _file_response(request, path)


def _file_response(request: HttpRequest, path: Path) -> HttpResponseBase:
    stat = path.stat()
    size = stat.st_size
    head = request.method == "HEAD"
    try:
        wanted = byte_range(request.headers.get("Range", ""), size) if "Range" in request.headers else None
    except RangeNotSatisfiable:
        response: HttpResponseBase = HttpResponse(status=416)
        response["Content-Range"] = f"bytes */{size}"
        return response
    gz = _gzip_companion(path, stat.st_mtime) if wanted is None else None
    if gz is not None and accepts_gzip(request.headers.get("Accept-Encoding", "")):
        logger.debug("download %s: sent gzip-encoded", path.name)
        response = _body(gz, 0, gz.stat().st_size, head=head)
        response["Content-Encoding"] = "gzip"
    elif wanted is None:
        response = _body(path, 0, size, head=head)
    else:
        response = _body(path, wanted.start, wanted.length, head=head)
        response.status_code = 206
        response["Content-Range"] = f"bytes {wanted.start}-{wanted.end}/{size}"
    if gz is not None:
        response["Vary"] = "Accept-Encoding"
    response["Accept-Ranges"] = "bytes"
    response["Last-Modified"] = http_date(stat.st_mtime)
    return response


def _gzip_companion(path: Path, mtime: float) -> Path | None:
    """``NAME.gz`` beside the file, if it exists and is not older than the file."""
    if path.name.endswith(".gz"):
        return None
    gz = path.with_name(path.name + ".gz")
    try:
        return gz if gz.is_file() and gz.stat().st_mtime >= mtime else None
    except OSError:
        return None


def _body(path: Path, start: int, length: int, *, head: bool) -> HttpResponseBase:
    """Stream ``length`` bytes from ``start`` (never the whole file in memory)."""
    if head:
        response: HttpResponseBase = HttpResponse(content_type="application/octet-stream")
    elif start + length == path.stat().st_size:
        handle = path.open("rb")
        handle.seek(start)
        response = FileResponse(handle, content_type="application/octet-stream")
    else:
        response = StreamingHttpResponse(
            _read_span(path, start, length), content_type="application/octet-stream"
        )
    response["Content-Length"] = str(length)
    return response


def _read_span(path: Path, start: int, length: int) -> Iterator[bytes]:
    with path.open("rb") as handle:
        handle.seek(start)
        while length > 0:
            chunk = handle.read(min(CHUNK, length))
            if not chunk:
                return
            length -= len(chunk)
            yield chunk


# --- uploads ---------------------------------------------------------------------------


class Readable(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...


@dataclass(frozen=True, slots=True)
class UploadOutcome:
    status: int
    message: str | None = None
    file_size: int | None = None

    @classmethod
    def refuse(cls, message: str) -> UploadOutcome:
        return cls(UploadStatus.PERMANENT, message)

    @classmethod
    def retry(cls, message: str) -> UploadOutcome:
        return cls(UploadStatus.TRANSIENT, message)


@csrf_exempt
def file_upload_handler(request: HttpRequest, slug: str) -> HttpResponse:
    """BOINC's file_upload_handler: a size query or one (partial) file upload per POST.

    The client labels the raw body x-www-form-urlencoded, so the body is read from the
    stream and request.POST is never touched (it would parse, and buffer, the file).
    """
    with stage("upload"):
        return _file_upload_handler(request, slug)


def _file_upload_handler(request: HttpRequest, slug: str) -> HttpResponse:
    if request.method != "POST":
        response = _upload_reply(
            UploadOutcome.refuse("The upload handler takes uploads sent by POST"), status=405
        )
        response["Allow"] = "POST"
        return response
    project = None
    try:
        project = project_by_slug(slug)
        if project is None:
            upload_count(project="", status=UPLOAD_STATUS_LABELS[UploadStatus.PERMANENT])
            return _upload_reply(UploadOutcome.refuse("No such project"), status=404)
        outcome = upload_handle(project=project, stream=request, now=clock.now())
    except DATABASE_UNAVAILABLE:
        raise  # the middleware's transient "project is down" reply; nothing can be counted
    except Exception:
        logger.exception("upload %s: failed", slug)
        outcome = UploadOutcome.retry("Server error; try again later")
    upload_count(project=project.slug if project else "", status=UPLOAD_STATUS_LABELS[outcome.status])
    if outcome.status != UploadStatus.OK and project is not None:
        logger.info("upload %s: status %s: %s", slug, outcome.status, outcome.message)
        transfer_error_record(project=project, kind="upload", message=outcome.message or "", now=clock.now())
    return _upload_reply(outcome)


def _upload_reply(outcome: UploadOutcome, status: int = 200) -> HttpResponse:
    body = render_upload_reply(outcome.status, _printable(outcome.message), outcome.file_size)
    return HttpResponse(body, content_type=XML, status=status)


def _printable(message: str | None) -> str | None:
    """Messages quote client input; keep them plain ASCII text that any XML can hold."""
    if message is None:
        return None
    text = message.encode("ascii", "backslashreplace").decode("ascii")
    return "".join(ch if ch.isprintable() else "?" for ch in text)[:500]


def upload_handle(*, project: Project, stream: Readable, now: datetime) -> UploadOutcome:
    """Read the header, then answer the size query or receive the file data."""
    buffered = b""
    try:
        end = find_upload_header_end(buffered)
        while end is None:
            chunk = stream.read(8192)
            if not chunk:
                break
            buffered += chunk
            end = find_upload_header_end(buffered)
        parsed = parse_upload_header(buffered if end is None else buffered[:end])
    except ProtocolError as exc:
        return UploadOutcome.refuse(f"Bad upload request: {exc}")
    if isinstance(parsed, FileSizeQuery):
        return upload_file_size(project=project, name=parsed.name)
    assert end is not None
    return upload_receive(project=project, req=parsed, first=buffered[end:], stream=stream, now=now)


@dataclass(frozen=True, slots=True)
class UploadTarget:
    """What an upload needs to know of the output file it names, its result and workunit."""

    id: int
    upload: bool
    max_nbytes: int
    uploaded: bool
    nbytes: int
    md5_cksum: str
    result_name: str
    server_state: int
    outcome: int
    file_delete_state: int
    error_mask: int
    in_sequence: bool


def _output_file(project: Project, name: str) -> UploadTarget | None:
    if name.startswith("."):
        return None
    row = upload_target_row(project.pk, name)
    if row is None:
        return None
    return UploadTarget(
        id=row[0],
        upload=bool(row[1]),
        max_nbytes=row[2],
        uploaded=bool(row[3]),
        nbytes=row[4],
        md5_cksum=row[5],
        result_name=row[6],
        server_state=row[7],
        outcome=row[8],
        file_delete_state=row[9],
        error_mask=row[10],
        in_sequence=bool(row[11]),
    )


def partial_path(project: Project, name: str) -> Path:
    """The hidden file an incomplete upload of ``name`` grows in (see partial_upload_name)."""
    return project.upload_dir / partial_upload_name(name)


def _not_accepting(output: UploadTarget) -> str | None:
    """Why uploads for this file's result are over, or None while they are welcome."""
    # The same rule as reports: a result that timed out unreported is still welcome.
    if not result_open_to_its_host(output.server_state, output.outcome, in_sequence=output.in_sequence):
        return f"Result {output.result_name} is over; its files are no longer accepted"
    if output.error_mask:
        return f"The job of {output.result_name} was cancelled or failed; its files are no longer accepted"
    if output.file_delete_state != FileDeleteState.INIT:
        # The file deleter has taken (or is taking) its files: a file stored now would never go.
        return f"Result {output.result_name} is finished; its files are no longer accepted"
    return None


def upload_file_size(*, project: Project, name: str) -> UploadOutcome:
    """``<get_file_size>``: the bytes already stored, so the client resumes after them."""
    output = _output_file(project, name)
    if output is None:
        return UploadOutcome.refuse(f"Unknown file {name}")
    if output.uploaded:
        return UploadOutcome(UploadStatus.OK, file_size=output.nbytes)
    reason = _not_accepting(output)
    if reason:
        return UploadOutcome.refuse(reason)
    try:
        size = partial_path(project, name).stat().st_size
    except FileNotFoundError:
        size = 0
    return UploadOutcome(UploadStatus.OK, file_size=size)


def upload_refusal(*, project: Project, output: UploadTarget, req: UploadRequest) -> str | None:
    """The permanent reason to refuse this upload header, or None to accept its data."""
    if not output.upload:
        return f"File {req.name} is kept on the host, not uploaded"
    # A project without an upload key issues no certificates, so there is nothing to check.
    if (
        not project.ignore_upload_certificates
        and project.upload_public_key
        and not verify_upload_certificate(
            project.upload_public_key, req.name, req.max_nbytes, req.xml_signature
        )
    ):
        return f"Invalid upload authorization (xml_signature) for {req.name}"
    limit = min(req.max_nbytes, output.max_nbytes)
    if req.nbytes > limit:
        return f"File {req.name} has {req.nbytes} bytes, more than its limit of {limit}"
    if not req.md5_cksum:
        return f"Upload of {req.name} has no md5_cksum"
    return None


def upload_receive(
    *, project: Project, req: UploadRequest, first: bytes, stream: Readable, now: datetime
) -> UploadOutcome:
    """Write the data at the client's offset; promote the file once it is whole and intact.

    The first upload to complete wins: everything from reading the file's row to the rename
    and the row's update happens under the file's upload lock, so a later upload (a cloned
    client, or a hostile one holding the certificate) with the same bytes is told they are
    stored, one with other bytes is refused, and the row and the file on disk always agree,
    however many uploaders race. The row is read once, under the lock (the header's name is
    already known to be a safe file name, so the lock file may be made before the lookup).
    """
    if req.name.startswith("."):
        return UploadOutcome.refuse(f"Unknown file {req.name}")
    upload_dir = project.upload_dir
    upload_dir.mkdir(parents=True, exist_ok=True)
    with upload_lock(lock_path(project, req.name)) as held:
        if not held:
            # A client retrying while its previous request is still writing must not interleave.
            return UploadOutcome.retry(f"An upload of {req.name} is already in progress")
        output = _output_file(project, req.name)
        if output is None:
            return UploadOutcome.refuse(f"Unknown file {req.name}")
        refusal = upload_refusal(project=project, output=output, req=req)
        if refusal:
            return UploadOutcome.refuse(refusal)
        if output.uploaded:
            if output.nbytes == req.nbytes and output.md5_cksum.lower() == req.md5_cksum.lower():
                return UploadOutcome(UploadStatus.OK, "Already received")
            return UploadOutcome.refuse(f"File {req.name} was already uploaded with other contents")
        reason = _not_accepting(output)
        if reason:
            return UploadOutcome.refuse(reason)
        return _receive_locked(project=project, output=output, req=req, first=first, stream=stream, now=now)


def _receive_locked(
    *,
    project: Project,
    output: UploadTarget,
    req: UploadRequest,
    first: bytes,
    stream: Readable,
    now: datetime,
) -> UploadOutcome:
    """The write, check and promotion of ``upload_receive``, under the file's upload lock."""
    partial = partial_path(project, req.name)
    # A whole file in one request (the usual case) is hashed as it is written; a resumed
    # one is read back, since the bytes before its offset came in an earlier request.
    digest = hashlib.md5(usedforsecurity=False) if req.offset == 0 else None
    with os.fdopen(os.open(partial, os.O_RDWR | os.O_CREAT, 0o644), "r+b") as handle:
        stored = os.fstat(handle.fileno()).st_size
        if req.offset > stored:
            return UploadOutcome.retry(f"Offset {req.offset} is past the {stored} bytes stored; ask again")
        received = req.offset + _write_at(
            handle, req.offset, req.nbytes - req.offset, first, stream, digest.update if digest else None
        )
    if received < req.nbytes:
        return UploadOutcome.retry(f"Received {received} of {req.nbytes} bytes of {req.name}; resume later")
    md5 = digest.hexdigest() if digest is not None else file_md5_hex(partial)
    if md5 != req.md5_cksum.lower():
        partial.unlink(missing_ok=True)
        return UploadOutcome.retry(f"MD5 of {req.name} does not match; upload it again")
    os.replace(partial, project.upload_dir / req.name)
    if not output_file_mark_uploaded(output_id=output.id, nbytes=received, md5_cksum=md5, now=now):
        # While the body came in, the result was handed to the file deleter (or purged): it
        # may already have been through, so a file kept now would stay for good.
        (project.upload_dir / req.name).unlink(missing_ok=True)
        return UploadOutcome.refuse(
            f"Result {output.result_name} is finished; its files are no longer accepted"
        )
    return UploadOutcome(UploadStatus.OK)


def lock_path(project: Project, name: str) -> Path:
    """``.NAME.lock`` beside the partial file: the lock every upload of ``name`` takes.

    Not the partial file itself: the rename that promotes it puts another inode at that
    path, and an uploader that opened the old one would hold a lock on the stored file.
    """
    return project.upload_dir / (partial_upload_name(name).removesuffix(".part") + ".lock")


@contextmanager
def upload_lock(path: Path) -> Iterator[bool]:
    """Hold the lock file at ``path`` (True), or yield False at once if another holds it.

    The holder removes the file when it is done, so no lock files pile up; a waiter that
    then locks the removed inode finds another (or none) at the path and counts as not
    holding the lock.
    """
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            held = os.stat(path).st_ino == os.fstat(fd).st_ino
        except (BlockingIOError, FileNotFoundError):
            held = False
        if not held:
            yield False
            return
        try:
            yield True
        finally:
            path.unlink(missing_ok=True)
    finally:
        os.close(fd)


def _write_at(
    handle: IO[bytes],
    offset: int,
    wanted: int,
    first: bytes,
    stream: Readable,
    also: Callable[[bytes], object] | None = None,
) -> int:
    """Replace everything from ``offset`` with up to ``wanted`` bytes of the body (each piece
    also given to ``also``, when set)."""
    handle.truncate(offset)
    handle.seek(offset)
    written = 0
    chunk = first
    while written < wanted:
        if not chunk:
            chunk = stream.read(min(CHUNK, wanted - written))
            if not chunk:
                break
        piece = chunk[: wanted - written]
        handle.write(piece)
        if also is not None:
            also(piece)
        written += len(piece)
        chunk = b""
    handle.flush()
    return written
