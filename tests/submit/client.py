"""A remote-submission client of the tests' own, speaking the protocol as BOINC's Python
library does: XML requests in the POST field ``request``, replies read into nested dicts
(repeated tags become lists), files uploaded as multipart ``file_0``, ``file_1``, ..."""

from __future__ import annotations

import hashlib
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client


def reply_dict(element: ElementTree.Element) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for child in element:
        value: Any = child.text if len(child) == 0 else reply_dict(child)
        if child.tag in out:
            if not isinstance(out[child.tag], list):
                out[child.tag] = [out[child.tag]]
            out[child.tag].append(value)
        else:
            out[child.tag] = value
    return out


def as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


@dataclass
class InputFile:
    source: str
    mode: str = "local_staged"


@dataclass
class RemoteInput:
    """An input hosts download from a URL (mode remote), written as lib/remote_submit.cpp
    writes it (nbytes with printf's %f)."""

    url: str
    nbytes: float
    md5: str


@dataclass
class Job:
    files: list[InputFile | RemoteInput] = field(default_factory=list)
    name: str | None = None
    rsc_fpops_est: float | None = None
    command_line: str | None = None
    input_template: str | None = None
    output_template: str | None = None
    priority: int | None = None


def md5_name(data: bytes) -> str:
    return "jf_" + hashlib.md5(data).hexdigest()


class SubmitClient:
    def __init__(self, client: Client, slug: str, authenticator: str) -> None:
        self.client = client
        self.base = f"/{slug}/"
        self.authenticator = authenticator
        self.last_status = 0

    def post(self, xml: str, handler: str = "submit_rpc_handler.php") -> dict[str, Any]:
        response = self.client.post(
            self.base + handler,
            data=urlencode({"request": xml}),
            content_type="application/x-www-form-urlencoded",
        )
        self.last_status = response.status_code
        return reply_dict(ElementTree.XML(response.content))

    def _auth(self) -> str:
        return f"<authenticator>{self.authenticator}</authenticator>\n"

    def create_batch(self, app_name: str, batch_name: str = "", expire_time: int = 0) -> dict[str, Any]:
        return self.post(
            f"<create_batch>\n{self._auth()}<app_name>{app_name}</app_name>\n"
            f"<batch_name>{batch_name}</batch_name>\n<expire_time>{expire_time}</expire_time>\n</create_batch>\n"
        )

    def batch_xml(self, op: str, app_name: str, jobs: list[Job], batch_id: int = 0, extra: str = "") -> str:
        xml = f"<{op}>\n{self._auth()}<batch>\n<app_name>{app_name}</app_name>\n<batch_id>{batch_id}</batch_id>\n"
        xml += "<app_version_num>0</app_version_num>\n" + extra
        for job in jobs:
            xml += "<job>\n"
            if job.name is not None:
                xml += f"<name>{job.name}</name>\n"
            if job.rsc_fpops_est is not None:
                xml += f"<rsc_fpops_est>{job.rsc_fpops_est:f}</rsc_fpops_est>\n"
            if job.command_line is not None:
                xml += f"<command_line>{job.command_line}</command_line>\n"
            if job.input_template is not None:
                xml += job.input_template + "\n"
            if job.output_template is not None:
                xml += job.output_template + "\n"
            if job.priority is not None:
                xml += f"<priority>{job.priority}</priority>\n"
            for f in job.files:
                if isinstance(f, RemoteInput):
                    xml += (
                        f"<input_file>\n<mode>remote</mode>\n<url>{f.url}</url>\n"
                        f"<nbytes>{f.nbytes:f}</nbytes>\n<md5>{f.md5}</md5>\n</input_file>\n"
                    )
                    continue
                xml += f"<input_file>\n<mode>{f.mode}</mode>\n<source>{f.source}</source>\n</input_file>\n"
            xml += "</job>\n"
        return xml + f"</batch>\n</{op}>\n"

    def submit_batch(
        self, app_name: str, jobs: list[Job], batch_id: int = 0, extra: str = ""
    ) -> dict[str, Any]:
        return self.post(self.batch_xml("submit_batch", app_name, jobs, batch_id, extra))

    def estimate_batch(self, app_name: str, jobs: list[Job]) -> dict[str, Any]:
        return self.post(self.batch_xml("estimate_batch", app_name, jobs))

    def batch_op(self, op: str, batch_id: int) -> dict[str, Any]:
        return self.post(f"<{op}>\n{self._auth()}<batch_id>{batch_id}</batch_id>\n</{op}>\n")

    def query_batch(self, batch_id: int, *, details: bool = False) -> dict[str, Any]:
        return self.post(
            f"<query_batch>\n{self._auth()}<batch_id>{batch_id}</batch_id>\n<get_cpu_time>1</get_cpu_time>\n"
            f"<get_job_details>{int(details)}</get_job_details>\n</query_batch>\n"
        )

    def query_batches(self) -> dict[str, Any]:
        return self.post(f"<query_batches>\n{self._auth()}<get_cpu_time>0</get_cpu_time>\n</query_batches>\n")

    def query_completed_job(self, job_name: str) -> dict[str, Any]:
        return self.post(
            f"<query_completed_job>\n{self._auth()}<job_name>{job_name}</job_name>\n</query_completed_job>\n"
        )

    def abort_jobs(self, names: list[str]) -> dict[str, Any]:
        jobs = "".join(f"<job_name>{n}</job_name>\n" for n in names)
        return self.post(f"<abort_jobs>\n{self._auth()}{jobs}</abort_jobs>\n")

    def job_counts(self) -> dict[str, Any]:
        response = self.client.post(
            self.base + "server_status.php?counts=1",
            data=urlencode({"request": ""}),
            content_type="application/x-www-form-urlencoded",
        )
        return reply_dict(ElementTree.XML(response.content))

    def _files_xml(self, op: str, names: list[str], batch_id: int, delete_time: int) -> str:
        phys = "".join(f"<phys_name>{n}</phys_name>\n" for n in names)
        return (
            f"<{op}>\n{self._auth()}<batch_id>{batch_id}</batch_id>\n<delete_time>{delete_time}</delete_time>\n"
            f"{phys}</{op}>\n"
        )

    def query_files(self, names: list[str], batch_id: int = 0, delete_time: int = 0) -> dict[str, Any]:
        return self.post(self._files_xml("query_files", names, batch_id, delete_time), "job_file.php")

    def upload_files(
        self, paths: list[Path], names: list[str], batch_id: int = 0, delete_time: int = 0
    ) -> dict[str, Any]:
        """As BOINC's library: ask which are absent, then upload those."""
        reply = self.query_files(names, batch_id, delete_time)
        if "error" in reply:
            return reply
        listed = reply.get("absent_files")
        absent = [int(i) for i in as_list(listed.get("file"))] if isinstance(listed, dict) else []
        if not absent:
            return {"success": None}
        data: dict[str, Any] = {
            "request": self._files_xml("upload_files", [names[i] for i in absent], batch_id, delete_time)
        }
        for n, i in enumerate(absent):
            data[f"file_{n}"] = SimpleUploadedFile(names[i], paths[i].read_bytes())
        response = self.client.post(self.base + "job_file.php", data=data)
        return reply_dict(ElementTree.XML(response.content))

    def output_file_url(self, result_name: str, file_num: int) -> str:
        auth = hashlib.md5((self.authenticator + result_name).encode()).hexdigest()
        return f"{self.base}get_output.php?cmd=result_file&result_name={result_name}&file_num={file_num}&auth_str={auth}"

    def output_files_url(self, batch_id: int) -> str:
        auth = hashlib.md5((self.authenticator + str(batch_id)).encode()).hexdigest()
        return f"{self.base}get_output.php?cmd=batch_files&batch_id={batch_id}&auth_str={auth}"
