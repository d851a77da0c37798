"""``app_info.xml`` (anonymous platform): the client-side file, for tests and the emulator."""

from __future__ import annotations

from dataclasses import dataclass

from apps.protocol.errors import ProtocolError
from apps.protocol.filenames import is_safe_file_name
from apps.protocol.reply_types import AppDesc, AppVersionDesc
from apps.protocol.request_types import ClientAppVersion
from apps.protocol.scheduler_reply import render_message
from apps.protocol.schema import from_xml, s_bool, s_nodes, s_str
from apps.protocol.xmlsafe import parse_document
from apps.protocol.xmlwrite import new_document, serialize

MAX_APP_INFO_BYTES = 1024 * 1024
_IN = "  "


@dataclass(frozen=True, slots=True)
class AppInfoFile:
    """A ``<file_info>`` of app_info.xml: the file must already be in the project dir (no URLs)."""

    name: str = s_str(required=True)
    executable: bool = s_bool()


@dataclass(frozen=True, slots=True)
class AppInfo:
    apps: tuple[AppDesc, ...] = s_nodes(AppDesc, tag="app")
    files: tuple[AppInfoFile, ...] = s_nodes(AppInfoFile, tag="file_info")
    app_versions: tuple[AppVersionDesc, ...] = s_nodes(AppVersionDesc, tag="app_version")


def render_app_info(info: AppInfo) -> bytes:
    """``<app_info>`` with apps, file_infos and app_versions, in that order."""
    for file in info.files:
        if not is_safe_file_name(file.name):
            raise ProtocolError(f"app_info: unsafe file name {file.name!r}")
    doc = new_document("app_info")
    for tag, items in (("app", info.apps), ("file_info", info.files), ("app_version", info.app_versions)):
        for item in items:
            with doc.block(tag, _IN) as block:
                render_message(block, item, _IN * 2)
    return serialize(doc)


def parse_app_info(body: bytes) -> AppInfo:
    root = parse_document(body, root="app_info", max_bytes=MAX_APP_INFO_BYTES)
    info: AppInfo = from_xml(AppInfo, root, "app_info")
    return info


def client_app_versions(info: AppInfo, *, host_flops: float) -> tuple[ClientAppVersion, ...]:
    """The ``<app_versions>`` a client with this app_info.xml reports (defaults as the client's)."""
    result = []
    for version in info.app_versions:
        avg_ncpus = 1.0 if version.avg_ncpus is None else version.avg_ncpus
        result.append(
            ClientAppVersion(
                app_name=version.app_name,
                version_num=version.version_num,
                platform=version.platform,
                avg_ncpus=avg_ncpus,
                max_ncpus=avg_ncpus if version.max_ncpus is None else version.max_ncpus,
                flops=host_flops if version.flops is None else version.flops,
                plan_class=version.plan_class,
                api_version=version.api_version,
                cmdline=version.cmdline,
                file_prefix=version.file_prefix,
                coprocs=version.coprocs,
                gpu_ram=version.gpu_ram or 0.0,
                dont_throttle=version.dont_throttle,
                needs_network=version.needs_network,
            )
        )
    return tuple(result)
