"""Helpers for the client-facing endpoints: a project with keys, an output file in progress,
and request bodies shaped like the 7.20.5 client's."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import pytest
from django.test import Client

from apps.core.domain.signing import sign_upload_certificate
from apps.projects.services import project_create
from apps.protocol import (
    ClientVersion,
    UploadReply,
    UploadRequest,
    parse_upload_reply,
    render_file_size_query,
    render_upload_header,
)
from apps.work.domain.states import ServerState
from apps.work.models import OutputFile
from tests.factories import AppFactory, OutputFileFactory, ResultFactory, WorkunitFactory

CLIENT_VERSION = ClientVersion(7, 20, 5)
MAX_NBYTES = 100_000


@pytest.fixture
def project(db):
    return project_create(slug="cli", name="Client Test").project


@pytest.fixture
def output(project) -> OutputFile:
    """The output file of a result in progress, with its upload certificate."""
    app = AppFactory(project=project, name="worker")
    result = ResultFactory(
        workunit=WorkunitFactory(app=app, name="job"), name="job_0", server_state=ServerState.IN_PROGRESS
    )
    return OutputFileFactory(
        result=result,
        name="job_0_0",
        max_nbytes=MAX_NBYTES,
        xml_signature=sign_upload_certificate(project.upload_private_key, "job_0_0", MAX_NBYTES),
    )


def md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


def upload_body(
    output: OutputFile,
    data: bytes,
    *,
    whole: bytes | None = None,
    offset: int = 0,
    name: str | None = None,
    nbytes: int | None = None,
    md5_cksum: str | None = None,
    max_nbytes: int | None = None,
    signature: str | None = None,
) -> bytes:
    """Header + data as the client sends them; ``whole`` is the complete file when ``data``
    is only the part from ``offset`` on (nbytes and md5 always describe the whole file)."""
    whole = data if whole is None else whole
    header = render_upload_header(
        UploadRequest(
            name=output.name if name is None else name,
            max_nbytes=output.max_nbytes if max_nbytes is None else max_nbytes,
            nbytes=len(whole) if nbytes is None else nbytes,
            md5_cksum=md5(whole) if md5_cksum is None else md5_cksum,
            offset=offset,
            xml_signature=output.xml_signature if signature is None else signature,
            data_offset=0,
            client_version=CLIENT_VERSION,
        )
    )
    return header + data


def size_query(name: str) -> bytes:
    return render_file_size_query(name, CLIENT_VERSION)


@dataclass(frozen=True)
class Posted:
    http_status: int
    reply: UploadReply


def post_upload(client: Client, project, body: bytes) -> Posted:
    response = client.post(
        f"/{project.slug}/file_upload_handler", data=body, content_type="application/x-www-form-urlencoded"
    )
    return Posted(response.status_code, parse_upload_reply(response.content))
