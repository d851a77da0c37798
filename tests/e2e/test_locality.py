"""Locality scheduling with the stock client: a large sticky input file is
downloaded once, the host gets the further jobs of that file, and once the file has no
work left the server tells the host to delete it."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from apps.locality.models import HostFile
from apps.projects.models import Project
from apps.work.domain.states import Outcome, ServerState
from apps.work.models import Result, Workunit
from apps.work.services import InputSpec, JobSpec, OutputSpec, workunit_create
from tests.e2e.conftest import E2EProject, make_e2e_project, wait_until

pytestmark = [pytest.mark.boinc_client, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

LARGE_NBYTES = 1_000_000


def _locality_project(slug: str) -> E2EProject:
    """A locality project that sends one job per RPC (so each RPC is one locality choice)."""
    e2e = make_e2e_project(slug=slug, target_nresults=1, min_quorum=1)
    Project.objects.filter(pk=e2e.project.pk).update(
        locality_scheduling=True,
        locality_scheduling_sorted_order=True,
        locality_scheduling_wait_period=0,
        max_wus_to_send=1,
    )
    e2e.project.refresh_from_db()
    return e2e


def _file_jobs(e2e: E2EProject, file_name: str, count: int, scratch: Path) -> list[Workunit]:
    """``count`` workunits FILE__k that all read the large file FILE as in.txt."""
    scratch.mkdir(parents=True, exist_ok=True)
    large = scratch / file_name
    if not large.exists():
        large.write_bytes(os.urandom(LARGE_NBYTES))
    return [
        workunit_create(
            project=e2e.project,
            app=e2e.app,
            job=JobSpec(
                name=f"{file_name}__{k}",
                inputs=(InputSpec(path=large, name=file_name, open_name="in.txt"),),
                outputs=(OutputSpec(open_name="out.txt", max_nbytes=10_000),),
                command_line="1",
                rsc_fpops_est=1e9,
                rsc_fpops_bound=1e12,
            ),
        )
        for k in range(count)
    ]


def _downloads(client, name: str) -> int:
    return client.log().count(f"Finished download of {name}")


def test_the_host_downloads_a_large_file_once_and_gets_its_further_jobs(boinc_client, base_url, tmp_path):
    started = time.monotonic()
    e2e = _locality_project("locfetch")
    _file_jobs(e2e, "alpha", 3, tmp_path / "in")
    _file_jobs(e2e, "beta", 3, tmp_path / "in")
    client = boinc_client()
    client.start(
        "--attach_project", e2e.master_url, e2e.account.authenticator, fetch_minimal_work=False, ncpus=1
    )

    def three_done() -> bool:
        return Result.objects.filter(server_state=ServerState.OVER, outcome=Outcome.SUCCESS).count() >= 3

    wait_until(three_done, timeout=45, what="three jobs reported", client=client)
    first_three = list(
        Result.objects.filter(host__isnull=False)
        .order_by("sent_time", "id")
        .values_list("workunit__name", flat=True)
    )[:3]
    prefix = first_three[0].partition("__")[0]
    # Once the host holds a file, its next jobs are that file's (the one download is reused).
    assert [name.partition("__")[0] for name in first_three] == [prefix] * 3
    assert _downloads(client, prefix) == 1
    assert HostFile.objects.get(file__name=prefix).downloads == 1
    assert time.monotonic() - started < 60


def test_the_host_deletes_a_large_file_that_has_no_work_left(boinc_client, base_url, tmp_path):
    started = time.monotonic()
    e2e = _locality_project("locdelete")
    (wu,) = _file_jobs(e2e, "gamma", 1, tmp_path / "in")
    client = boinc_client()
    client.start(
        "--attach_project", e2e.master_url, e2e.account.authenticator, fetch_minimal_work=False, ncpus=1
    )
    large = client.project_dir(e2e.master_url) / "gamma"
    wait_until(large.exists, timeout=30, what="the large file on the host", client=client)

    def deleted() -> bool:
        if large.exists():
            client.cmd("--project", e2e.master_url, "update", check=False)  # past "no work" backoffs
            time.sleep(2)
            return False
        return True

    wait_until(deleted, timeout=40, what="the host to delete the large file", client=client)
    assert Result.objects.get(workunit=wu).outcome == Outcome.SUCCESS
    host_file = HostFile.objects.get(file__name="gamma")
    assert host_file.delete_requested is True
    assert time.monotonic() - started < 60
