"""Targeted and broadcast jobs under concurrent RPCs of one user's hosts: each targeted job
gets exactly the one result it needs, each host one result of the broadcast job."""

from __future__ import annotations

import threading
from collections import Counter

import pytest
from django.db import connection

from apps.work.domain.assignments import Target, TargetType
from apps.work.models import Result
from apps.work.services import JobSpec, workunits_create
from tests.scheduler.test_concurrency import host_loop

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow, pytest.mark.postgres]


def _hosts_ask_until_empty(project, account, nhosts: int) -> list[str]:
    """``nhosts`` hosts of ``account`` asking at once until no more work comes; the result
    names they got."""
    received: list[str] = []
    errors: list[BaseException] = []
    threads = [
        threading.Thread(target=host_loop, args=(project, account.authenticator, i, received, errors))
        for i in range(nhosts)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=600)
    assert errors == []
    return received


def test_concurrent_hosts_of_the_target_share_its_jobs_once_each(project, account, cpu_app):
    njobs, nhosts = (300, 16) if connection.vendor == "postgresql" else (60, 4)
    mine = Target(TargetType.USER, account.id)
    jobs = [
        JobSpec(name=f"aimed{i}", rsc_fpops_est=1e11, rsc_fpops_bound=1e13, target=mine) for i in range(njobs)
    ]
    workunits_create(project=project, app=cpu_app, jobs=jobs)
    received = _hosts_ask_until_empty(project, account, nhosts)
    assert [name for name, n in Counter(received).items() if n > 1] == []
    per_workunit = Counter(Result.objects.values_list("workunit__name", flat=True))
    assert set(per_workunit.values()) == {1}
    assert len(per_workunit) == njobs


def test_concurrent_hosts_each_get_a_broadcast_job_once(project, account, cpu_app):
    nhosts = 16 if connection.vendor == "postgresql" else 4
    everyone = Target(TargetType.NONE, multi=True)
    workunits_create(
        project=project,
        app=cpu_app,
        jobs=[JobSpec(name="everyone", rsc_fpops_est=1e11, rsc_fpops_bound=1e13, target=everyone)],
    )
    received = _hosts_ask_until_empty(project, account, nhosts)
    assert len(received) == len(set(received)) == nhosts
    assert Result.objects.values("host").distinct().count() == nhosts
