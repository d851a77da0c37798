"""HTTP for the live emulator: keep-alive connections and the file upload protocol.

Only the standard library (``http.client``): the project has no HTTP client dependency,
and one persistent connection per thread and server keeps the load generator cheap.
"""

from __future__ import annotations

import hashlib
import http.client
import ssl
import threading
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import urlencode, urlsplit

from apps.protocol import (
    AccountReply,
    ClientVersion,
    FileInfoDesc,
    ProtocolError,
    UploadRequest,
    UploadStatus,
    parse_account_reply,
    parse_upload_reply,
    render_upload_header,
)

USER_AGENT = "BOINC client (x86_64-pc-linux-gnu 7.20.5)"
CLIENT_VERSION = ClientVersion(7, 20, 5)
# A stale keep-alive connection fails like this before any byte of the reply arrives.
_STALE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError)


class Session(Protocol):
    """What a host needs to talk to the server (``HttpSession``, or an in-process client)."""

    def request(
        self, method: str, url: str, body: bytes | None = None, *, content_type: str = ""
    ) -> tuple[int, bytes]: ...

    def close(self) -> None: ...


class HttpSession:
    """Persistent connections of one thread, keyed by scheme and host.

    ``context`` verifies HTTPS servers (a test server's self-signed certificate); the
    default trusts the system's certificate authorities.
    """

    def __init__(self, *, timeout: float = 60.0, context: ssl.SSLContext | None = None) -> None:
        self.timeout = timeout
        self.context = context
        self._connections: dict[tuple[str, str], http.client.HTTPConnection] = {}

    def request(
        self, method: str, url: str, body: bytes | None = None, *, content_type: str = ""
    ) -> tuple[int, bytes]:
        """Send one request and return (status, body); raises OSError on network failure.

        A request on a reused connection the server has meanwhile closed is sent once
        more on a fresh one; nothing else is retried (a scheduler RPC is not idempotent).
        """
        parts = urlsplit(url)
        key = (parts.scheme, parts.netloc)
        target = parts.path or "/"
        if parts.query:
            target += "?" + parts.query
        headers = {"User-Agent": USER_AGENT}
        if content_type:
            headers["Content-Type"] = content_type
        for attempt in (0, 1):
            reused = key in self._connections
            conn = self._connections.get(key) or self._connect(parts.scheme, parts.netloc)
            self._connections[key] = conn
            try:
                conn.request(method, target, body=body, headers=headers)
                response = conn.getresponse()
                data = response.read()
            except _STALE:
                self._drop(key)
                if reused and attempt == 0:
                    continue
                raise
            except (OSError, http.client.HTTPException):
                self._drop(key)
                raise
            if response.will_close:
                self._drop(key)
            return response.status, data
        raise AssertionError("unreachable")

    def close(self) -> None:
        for key in list(self._connections):
            self._drop(key)

    def _connect(self, scheme: str, netloc: str) -> http.client.HTTPConnection:
        if scheme == "https":
            return http.client.HTTPSConnection(netloc, timeout=self.timeout, context=self.context)
        return http.client.HTTPConnection(netloc, timeout=self.timeout)

    def _drop(self, key: tuple[str, str]) -> None:
        conn = self._connections.pop(key, None)
        if conn is not None:
            conn.close()


class UploadGate:
    """Shared by all hosts: uploads stop, once and for all, if the server has no handler.

    The upload endpoint may not be deployed on the server under test; a 404, 405 or 501
    from it is noted once and the run goes on without uploads instead of failing.
    """

    def __init__(self, enabled: bool = True) -> None:
        self._lock = threading.Lock()
        self.enabled = enabled
        self.reason = "" if enabled else "uploads turned off"

    def disable(self, reason: str) -> None:
        with self._lock:
            if self.enabled:
                self.enabled = False
                self.reason = reason


@dataclass(frozen=True, slots=True)
class OutputFile:
    """An output file a finished job produced, ready to upload and report."""

    info: FileInfoDesc
    content: bytes

    @property
    def md5(self) -> str:
        return hashlib.md5(self.content).hexdigest()  # BOINC's checksum, not a security use


def upload_body(output: OutputFile) -> bytes:
    """The body 7.20.5 POSTs: the unclosed header ending in ``<data>\\n``, then the bytes."""
    header = render_upload_header(
        UploadRequest(
            name=output.info.name,
            max_nbytes=int(output.info.max_nbytes or len(output.content)),
            nbytes=len(output.content),
            md5_cksum=output.md5,
            offset=0,
            xml_signature=(output.info.xml_signature or "").strip(),
            data_offset=0,
            client_version=CLIENT_VERSION,
        )
    )
    return header + output.content


@dataclass(frozen=True, slots=True)
class UploadAttempt:
    """How one upload went: stored (no error), to be tried again later, or refused for good."""

    error: str | None = None
    kind: str = ""  # what went wrong, for counting (empty when stored or skipped)
    permanent: bool = False


def upload_file(session: Session, gate: UploadGate, output: OutputFile) -> UploadAttempt:
    """Upload one output file, as the client does: a network failure, an HTTP error status
    or a transient ``<data_server_reply>`` is tried again later; status -1 is a refusal."""
    if not gate.enabled:
        return UploadAttempt()
    if not output.info.upload_urls:
        return UploadAttempt(f"{output.info.name}: the reply gave no upload URL", "upload: no URL", True)
    url = output.info.upload_urls[0]
    try:
        status, data = session.request(
            "POST", url, upload_body(output), content_type="application/x-www-form-urlencoded"
        )
    except (OSError, http.client.HTTPException) as exc:
        return UploadAttempt(f"upload {output.info.name}: {exc}", "upload: connection failed")
    if status in (404, 405, 501):
        gate.disable(f"the upload handler {url} answered HTTP {status}; uploads skipped")
        return UploadAttempt()
    if status != 200:
        return UploadAttempt(f"upload {output.info.name}: HTTP {status}", f"upload: HTTP {status}")
    try:
        reply = parse_upload_reply(data)
    except ProtocolError as exc:
        return UploadAttempt(f"upload {output.info.name}: bad reply ({exc})", "upload: unreadable reply")
    if reply.status == UploadStatus.OK:
        return UploadAttempt()
    error = f"upload {output.info.name}: status {reply.status} {reply.message or ''}".strip()
    if reply.status == UploadStatus.TRANSIENT:
        return UploadAttempt(error, "upload: try later (status 1)")
    return UploadAttempt(error, "upload: refused (status -1)", True)


def account_key(session: Session, master_url: str, *, email: str, password: str, user_name: str) -> str:
    """The authenticator of an account, made with ``create_account.php`` as the Manager does.

    An address already taken is looked up with ``lookup_account.php`` and the same
    password hash (md5 of password + lower-case email, BOINC's scheme).
    """
    digest = hashlib.md5((password + email.lower()).encode()).hexdigest()  # BOINC's passwd_hash
    base = master_url.rstrip("/") + "/"
    query = urlencode({"email_addr": email, "passwd_hash": digest, "user_name": user_name})
    reply = _account_rpc(session, f"{base}create_account.php?{query}")
    if reply.authenticator:
        return reply.authenticator
    query = urlencode({"email_addr": email, "passwd_hash": digest})
    found = _account_rpc(session, f"{base}lookup_account.php?{query}")
    if found.authenticator:
        return found.authenticator
    raise LiveError(f"no account for {email}: error {reply.error_num} {reply.error_msg or ''}".strip())


def _account_rpc(session: Session, url: str) -> AccountReply:
    try:
        status, data = session.request("GET", url)
    except (OSError, http.client.HTTPException) as exc:
        raise LiveError(f"{url}: {exc}") from exc
    if status != 200:
        raise LiveError(f"{url}: HTTP {status}")
    try:
        return parse_account_reply(data)
    except ProtocolError as exc:
        raise LiveError(f"{url}: {exc}") from exc


class LiveError(RuntimeError):
    """The live run cannot start (server unreachable, no account)."""
