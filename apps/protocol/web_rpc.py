"""Replies of the attach-time web RPCs and of the account-manager RPCs.

``<project_config>``, ``<account_out>``, ``<error>``, ``<am_get_info_reply>`` and the
``<success/>`` replies of am_set_host_info.php, plus the client-side parsers the emulator
needs.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from urllib.parse import quote_plus

from apps.protocol import numbers as num
from apps.protocol.errors import ProtocolError
from apps.protocol.schema import from_xml, render_fields, s_bool, s_int, s_nodes, s_str, scalar_names
from apps.protocol.xmlsafe import child_elements, inner_xml, leaf_text, parse_document
from apps.protocol.xmlwrite import Block, new_document, serialize

_IN = "    "
MAX_WEB_RPC_BYTES = 1024 * 1024


class WebRpcError(IntEnum):
    """BOINC error numbers the account RPCs return (lib/error_numbers.h)."""

    NOT_FOUND = -136  # ERR_DB_NOT_FOUND: no such account
    NOT_UNIQUE = -137  # ERR_DB_NOT_UNIQUE
    PROJECT_DOWN = -183  # ERR_PROJECT_DOWN
    BAD_USER_NAME = -188  # ERR_BAD_USER_NAME
    BAD_EMAIL_ADDR = -205  # ERR_BAD_EMAIL_ADDR
    BAD_PASSWD = -206  # ERR_BAD_PASSWD
    ACCT_CREATION_DISABLED = -208  # ERR_ACCT_CREATION_DISABLED


DEFAULT_ERROR_MESSAGES = {
    WebRpcError.NOT_FOUND: "No such account",
    WebRpcError.NOT_UNIQUE: "Account already exists",
    WebRpcError.PROJECT_DOWN: "Project is down",
    WebRpcError.BAD_USER_NAME: "Bad user name",
    WebRpcError.BAD_EMAIL_ADDR: "Invalid email address",
    WebRpcError.BAD_PASSWD: "Bad password",
    WebRpcError.ACCT_CREATION_DISABLED: "Account creation is disabled",
}


@dataclass(frozen=True, slots=True)
class PlatformDesc:
    platform_name: str = s_str(required=True)
    user_friendly_name: str = s_str()
    plan_class: str = s_str()


@dataclass(frozen=True, slots=True)
class ProjectConfig:
    """``get_project_config.php`` reply; every element is optional for the client."""

    name: str = s_str()
    master_url: str = s_str()
    web_rpc_url_base: str = s_str()
    local_revision: str = s_str()
    min_passwd_length: int = s_int(6, lo=0, hi=1000)
    uses_username: bool = s_bool()
    account_manager: bool = s_bool()
    account_creation_disabled: bool = s_bool()
    client_account_creation_disabled: bool = s_bool()
    web_stopped: bool = s_bool(emit="01")
    sched_stopped: bool = s_bool(emit="01")
    min_client_version: int | None = s_int(None, lo=0, hi=num.INT32_MAX)
    platforms: tuple[PlatformDesc, ...] = s_nodes(PlatformDesc, tag="platform", wrapper="platforms")
    terms_of_use: str = s_str()
    ldap_auth: bool = s_bool()
    error_num: int | None = s_int(None)


@dataclass(frozen=True, slots=True)
class AccountReply:
    """Client-side view of ``<account_out>`` or ``<error>``."""

    authenticator: str | None = None
    error_num: int | None = None
    error_msg: str | None = None


@dataclass(frozen=True, slots=True)
class AmInfo:
    """``am_get_info.php`` reply content (account-manager view of one user)."""

    id: int
    name: str
    country: str = ""
    weak_auth: str = ""
    cpid: str = ""
    has_profile: bool = False
    create_time: int = 0
    global_prefs: str = ""
    project_prefs: str = ""
    url: str = ""
    send_email: bool = False
    show_hosts: bool = False
    teamid: int = 0
    venue: str = ""
    teamfounder: bool = False


def render_project_config(config: ProjectConfig) -> bytes:
    doc = new_document("project_config")
    head = [n for n in scalar_names(ProjectConfig) if n not in ("terms_of_use", "ldap_auth", "error_num")]
    render_fields(doc, config, head, client=False, indent=_IN)
    if config.platforms:
        with doc.block("platforms", _IN) as platforms:
            for platform in config.platforms:
                with platforms.block("platform", _IN * 2) as block:
                    render_fields(block, platform, scalar_names(PlatformDesc), client=False, indent=_IN * 3)
    render_fields(doc, config, ("terms_of_use", "ldap_auth", "error_num"), client=False, indent=_IN)
    return serialize(doc)


def parse_project_config(body: bytes, *, max_bytes: int = MAX_WEB_RPC_BYTES) -> ProjectConfig:
    config: ProjectConfig = from_xml(
        ProjectConfig, parse_document(body, root="project_config", max_bytes=max_bytes), "project_config"
    )
    return config


def render_account_out(authenticator: str | None) -> bytes:
    """``<account_out>`` with the authenticator, or ``<success/>`` when there is none to give."""
    doc = new_document("account_out")
    if authenticator is None:
        doc.flag("success", _IN)
    else:
        doc.leaf("authenticator", authenticator, _IN)
    return serialize(doc)


def render_error(error_num: int, error_msg: str | None = None) -> bytes:
    """``<error><error_num/><error_msg/></error>``; the message defaults to a standard text."""
    doc = new_document("error")
    doc.leaf("error_num", num.format_int(int(error_num)), _IN)
    if error_msg is None:
        try:
            error_msg = DEFAULT_ERROR_MESSAGES[WebRpcError(error_num)]
        except ValueError:
            error_msg = "Error"
    doc.leaf("error_msg", error_msg, _IN)
    return serialize(doc)


def parse_account_reply(body: bytes, *, max_bytes: int = MAX_WEB_RPC_BYTES) -> AccountReply:
    """Read an account_out or error reply; like the client, tags are found at any depth."""
    root = parse_document(body, root=("account_out", "error"), max_bytes=max_bytes)
    found: dict[str, str] = {}
    for element in root.iter():
        if isinstance(element.tag, str) and element.tag in ("authenticator", "error_num", "error_msg"):
            found[element.tag] = leaf_text(element).strip()
    error_num = None
    if "error_num" in found:
        error_num = num.parse_int(found["error_num"], "error_num")
    return AccountReply(found.get("authenticator"), error_num, found.get("error_msg"))


def render_am_get_info_reply(info: AmInfo) -> bytes:
    """The ``am_get_info.php`` reply: user fields in BOINC's order, text URL-encoded as the
    PHP page does (no postal code: the project does not ask for one)."""
    doc = new_document("am_get_info_reply")
    doc.flag("success", _IN)
    doc.leaf("id", num.format_int(info.id), _IN)
    doc.leaf("name", php_urlencode(info.name), _IN)
    doc.leaf("country", php_urlencode(info.country), _IN)
    doc.leaf("weak_auth", info.weak_auth, _IN)
    doc.leaf("cpid", info.cpid, _IN)
    doc.leaf("has_profile", "1" if info.has_profile else "0", _IN)
    doc.leaf("create_time", num.format_int(info.create_time), _IN)
    _raw_block(doc, "global_prefs", info.global_prefs)
    _raw_block(doc, "project_prefs", info.project_prefs)
    doc.leaf("url", php_urlencode(info.url), _IN)
    doc.leaf("send_email", "1" if info.send_email else "0", _IN)
    doc.leaf("show_hosts", "1" if info.show_hosts else "0", _IN)
    doc.leaf("teamid", num.format_int(info.teamid), _IN)
    doc.leaf("venue", info.venue, _IN)
    if info.teamfounder:
        doc.flag("teamfounder", _IN)
    return serialize(doc)


def render_success_reply(root: str) -> bytes:
    """``<root><success/></root>``: what am_set_host_info.php answers when it is done."""
    doc = new_document(root)
    doc.flag("success", _IN)
    return serialize(doc)


def php_urlencode(value: str) -> str:
    """PHP's urlencode(): like quote_plus, but ``~`` is encoded too."""
    return quote_plus(value, safe="").replace("~", "%7E")


def _raw_block(doc: Block, tag: str, content: str) -> None:
    doc.raw(tag, content if content.strip() else "\n", _IN)


def parse_am_get_info_reply(body: bytes, *, max_bytes: int = MAX_WEB_RPC_BYTES) -> dict[str, str]:
    """Client side: the reply's top-level leaf values (prefs blocks as XML text)."""
    root = parse_document(body, root="am_get_info_reply", max_bytes=max_bytes)
    result: dict[str, str] = {}
    for child in child_elements(root):
        if child.tag in ("global_prefs", "project_prefs"):
            result[child.tag] = inner_xml(child).strip()
        else:
            result[child.tag] = leaf_text(child).strip()
    if "success" not in result and "error_num" not in result:
        raise ProtocolError("am_get_info reply has neither <success/> nor <error_num>")
    return result
