"""app_info.xml for anonymous-platform tests."""

from __future__ import annotations

import pytest

from apps.core.domain.resources import ProcType
from apps.protocol import (
    AppDesc,
    AppInfo,
    AppInfoFile,
    AppVersionDesc,
    CoprocUsage,
    FileRef,
    ProtocolError,
    SchedulerRequest,
    client_app_versions,
    parse_app_info,
    parse_request,
    render_app_info,
    render_request,
)

INFO = AppInfo(
    apps=(AppDesc("worker", "Test worker"),),
    files=(AppInfoFile("worker_1.00_x86_64-pc-linux-gnu", executable=True),),
    app_versions=(
        AppVersionDesc(
            "worker",
            100,
            "x86_64-pc-linux-gnu",
            avg_ncpus=1,
            file_refs=(FileRef("worker_1.00_x86_64-pc-linux-gnu", main_program=True),),
        ),
        AppVersionDesc(
            "worker",
            101,
            "x86_64-pc-linux-gnu",
            plan_class="cuda",
            avg_ncpus=0.1,
            flops=2e12,
            coprocs=(CoprocUsage(ProcType.NVIDIA, 1),),
            file_refs=(FileRef("worker_1.00_x86_64-pc-linux-gnu", main_program=True),),
        ),
    ),
)


def test_app_info_shape_matches_the_doc():
    body = render_app_info(INFO)

    assert body.startswith(b"<app_info>\n  <app>\n    <name>worker</name>\n")
    assert (
        b"<file_info>\n    <name>worker_1.00_x86_64-pc-linux-gnu</name>\n    <executable/>\n  </file_info>"
        in body
    )
    assert b"<url>" not in body
    assert parse_app_info(body) == INFO


def test_unsafe_file_in_app_info_is_refused():
    with pytest.raises(ProtocolError):
        render_app_info(AppInfo(files=(AppInfoFile("../worker"),)))


def test_client_app_versions_feed_an_anonymous_request():
    versions = client_app_versions(INFO, host_flops=1e9)
    request = SchedulerRequest(platform_name="anonymous", app_versions=versions)

    parsed = parse_request(render_request(request), max_bytes=1 << 20)

    assert parsed.is_anonymous_platform is True
    assert [(v.version_num, v.flops, v.max_ncpus) for v in parsed.app_versions] == [
        (100, 1e9, 1.0),
        (101, 2e12, 0.1),
    ]
    assert parsed.app_versions[1].coprocs == (CoprocUsage(ProcType.NVIDIA, 1.0),)
