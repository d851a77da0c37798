"""BOINC's platform, app and app_version rows (with the files their xml_doc lists)."""

from __future__ import annotations

from dataclasses import dataclass

from apps.applications.domain.plan_classes import PlanClassSpec
from apps.boinc_import.domain.values import (
    INT32_MAX,
    Mapped,
    Row,
    RowRefused,
    average_time,
    described,
    file_name_check,
    fitted,
    flag,
    integer,
    number,
    text,
    unix_time,
)
from apps.protocol import StoredDoc

MD5_HEX_LEN = 32


def map_platform(row: Row) -> Mapped:
    notes: list[str] = []
    values = {
        "name": text(row, "name", max_len=100, required=True),
        "user_friendly_name": described(row, "user_friendly_name", max_len=200, notes=notes),
        "deprecated": flag(row, "deprecated"),
    }
    return Mapped(values, notes)


def map_app(row: Row, *, now: float) -> Mapped:
    notes: list[str] = []
    name = text(row, "name", max_len=100, required=True)
    if "/" in name or name.strip() != name:
        raise RowRefused(f"app name {name!r} has a '/' or surrounding white space")
    values = {
        "name": name,
        "user_friendly_name": described(row, "user_friendly_name", max_len=200, notes=notes),
        "create_time": unix_time(row, "create_time", now=now, required=True),
        "deprecated": flag(row, "deprecated"),
        "beta": flag(row, "beta"),
        "non_cpu_intensive": flag(row, "non_cpu_intensive"),
        "weight": number(row, "weight"),
        "min_avg_pfc": number(row, "min_avg_pfc"),
        "host_scale_check": flag(row, "host_scale_check"),
        "homogeneous_redundancy": _hr_type(row, notes),
        "homogeneous_app_version": flag(row, "homogeneous_app_version"),
    }
    return Mapped(values, notes)


HR_TYPES = (0, 1, 2)  # off, fine, coarse


def _hr_type(row: Row, notes: list[str]) -> int:
    """BOINC's scheduler treats a type it does not know as no homogeneous redundancy."""
    value = integer(row, "homogeneous_redundancy", lo=-(2**31))
    if value not in HR_TYPES:
        notes.append(f"homogeneous_redundancy {value} is no known type; imported as off")
        return 0
    return value


@dataclass(frozen=True, slots=True)
class VersionFile:
    """A file of an app version as the version's xml_doc describes it."""

    file_name: str
    open_name: str
    main_program: bool
    copy_file: bool
    md5_cksum: str
    nbytes: int
    file_signature: str
    download_urls: tuple[str, ...]


def map_app_version(
    row: Row, *, now: float, app_id: int | None, platform_id: int | None, doc: StoredDoc, plan: PlanClassSpec
) -> Mapped:
    """An app_version row; ``doc`` is its parsed xml_doc, ``plan`` its resolved plan class."""
    if app_id is None:
        raise RowRefused(f"its app {row['appid']} was not imported")
    if platform_id is None:
        raise RowRefused(f"its platform {row['platformid']} was not imported")
    if len(doc.app_versions) != 1:
        raise RowRefused(f"xml_doc has {len(doc.app_versions)} <app_version> elements, not one")
    desc = doc.app_versions[0]
    notes: list[str] = []
    values = {
        "app_id": app_id,
        "platform_id": platform_id,
        "version_num": integer(row, "version_num", lo=1),
        "plan_class": text(row, "plan_class", max_len=100),
        "create_time": unix_time(row, "create_time", now=now, required=True),
        "deprecated": flag(row, "deprecated"),
        "beta": flag(row, "beta"),
        "api_version": desc.api_version[:20],
        "cmdline": fitted(desc.cmdline, "cmdline", 500),
        "min_core_version": integer(row, "min_core_version", hi=INT32_MAX),
        "max_core_version": integer(row, "max_core_version", hi=INT32_MAX),
        "proc_type": plan.proc_type.value,
        "avg_ncpus": plan.avg_ncpus,
        "max_ncpus": plan.max_ncpus,
        "multi_thread": plan.multi_thread,
        "gpu_usage": plan.gpu_usage,
        "pfc_n": number(row, "pfc_n"),
        "pfc_avg": number(row, "pfc_avg"),
        "pfc_scale": number(row, "pfc_scale"),
        "expavg_credit": number(row, "expavg_credit"),
        "expavg_time": average_time(row, "expavg_time", now=now),
    }
    return Mapped(values, notes, files=version_files(doc))


def version_files(doc: StoredDoc) -> list[VersionFile]:
    """The version's files in file_ref order; each needs a file_info with size, MD5 and
    signature (the client checks all three), and exactly one is the main program."""
    infos = {info.name: info for info in doc.file_infos}
    files = []
    for ref in doc.app_versions[0].file_refs:
        info = infos.get(ref.file_name)
        if info is None:
            raise RowRefused(f"xml_doc: file_ref {ref.file_name!r} has no file_info")
        file_name_check(info.name)
        if not info.md5_cksum or len(info.md5_cksum) != MD5_HEX_LEN or info.nbytes is None:
            raise RowRefused(f"xml_doc: file {info.name!r} lacks its md5_cksum or nbytes")
        if not info.file_signature:
            raise RowRefused(f"xml_doc: file {info.name!r} has no file_signature")
        files.append(
            VersionFile(
                file_name=info.name,
                open_name=fitted(ref.open_name, "open_name", 255),
                main_program=ref.main_program,
                copy_file=ref.copy_file,
                md5_cksum=info.md5_cksum.lower(),
                nbytes=int(info.nbytes),
                file_signature=info.file_signature.strip() + "\n",
                download_urls=info.download_urls,
            )
        )
    mains = sum(f.main_program for f in files)
    if mains != 1:
        raise RowRefused(f"xml_doc names {mains} main programs, not one")
    if len({f.file_name for f in files}) != len(files):
        raise RowRefused("xml_doc lists a file twice")
    return files
