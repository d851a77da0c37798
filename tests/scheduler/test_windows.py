"""Candidate windows sized to the request: read and lock about as many rows as jobs wanted.

The counting is plain arithmetic (apps/scheduler/domain/policy.py), tested without a
database; one RPC test checks that the window the scheduler reads follows the request.
"""

import math

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from hypothesis import given
from hypothesis import strategies as st

from apps.core.domain.resources import ProcType
from apps.scheduler.domain.policy import ResourceNeed, WorkNeed, candidate_window, jobs_to_fill
from apps.scheduler.services import dispatch
from tests.scheduler.conftest import make_jobs, make_request, rpc

CPU, GPU = ProcType.CPU, ProcType.NVIDIA


def need(*, secs: float = 0.0, instances: float = 0.0, gpu_secs: float | None = None, max_jobs: int = 100):
    resources = {CPU: ResourceNeed(CPU, secs, instances, 0.0, 4, 1.0)}
    if gpu_secs is not None:
        resources[GPU] = ResourceNeed(GPU, gpu_secs, 0.0, 0.0, 1, 1.0)
    return WorkNeed(rsc_spec_request=True, seconds_to_fill=0.0, resources=resources, max_jobs=max_jobs)


def test_idle_instances_take_one_job_each():
    assert jobs_to_fill(need(instances=4), {CPU: (100.0, 1.0)}) == {CPU: 4}


def test_seconds_take_as_many_jobs_as_they_cover():
    assert jobs_to_fill(need(secs=1000), {CPU: (100.0, 1.0)}) == {CPU: 10}
    assert jobs_to_fill(need(secs=1001), {CPU: (100.0, 1.0)}) == {CPU: 11}


def test_multicore_jobs_cover_more_seconds_and_instances():
    assert jobs_to_fill(need(secs=800, instances=4), {CPU: (100.0, 4.0)}) == {CPU: 2}


def test_the_per_rpc_cap_bounds_the_count():
    assert jobs_to_fill(need(secs=1e6, max_jobs=5), {CPU: (100.0, 1.0)}) == {CPU: 5}


def test_an_unknown_job_size_leaves_the_count_unknown():
    assert jobs_to_fill(need(secs=100, gpu_secs=100), {CPU: (100.0, 1.0)}) is None


def test_resources_not_wanted_are_not_counted():
    assert jobs_to_fill(need(secs=0, gpu_secs=500), {GPU: (100.0, 1.0)}) == {GPU: 5}


def test_an_old_style_request_is_filled_with_the_shortest_jobs():
    old = WorkNeed(
        rsc_spec_request=False,
        seconds_to_fill=1000.0,
        resources={
            CPU: ResourceNeed(CPU, 0.0, 0.0, 0.0, 4, 1.0),
            GPU: ResourceNeed(GPU, 0.0, 0.0, 0.0, 1, 1.0),
        },
        max_jobs=100,
    )
    assert jobs_to_fill(old, {CPU: (200.0, 1.0), GPU: (50.0, 1.0)}) == {CPU: 20, GPU: 20}


@given(
    secs=st.floats(0, 1e5),
    instances=st.floats(0, 64),
    duration=st.floats(10, 1e6),
    usage=st.sampled_from([0.5, 1.0, 2.0, 4.0]),
)
def test_sending_the_counted_jobs_fills_the_request(secs, instances, duration, usage):
    wanted = need(secs=secs, instances=instances, max_jobs=10**9)
    if not wanted.work_needed():
        return
    count = jobs_to_fill(wanted, {CPU: (duration, usage)})[CPU]
    for _ in range(count):
        wanted.record_job(proc_type=CPU, est_dur=duration, avg_ncpus=usage, gpu_usage=0.0)
    assert not wanted.needs(CPU)


def test_a_window_is_a_quarter_larger_than_the_jobs_plus_two():
    assert candidate_window({CPU: 1}) == 3
    assert candidate_window({CPU: 8}) == 12
    assert candidate_window(None) is None


def test_with_two_resources_wanted_each_gets_rows_for_the_larger_count():
    # Candidates of both resources come mixed in priority order.
    assert candidate_window({CPU: 8, GPU: 2}) == 22


@pytest.fixture
def no_job_sizes(monkeypatch):
    monkeypatch.setattr(dispatch, "_typical_fpops", {})


def _first_window(client, project, req) -> int:
    with CaptureQueriesContext(connection) as queries:
        rpc(client, project, req)
    windows = [q["sql"] for q in queries.captured_queries if "NOT EXISTS" in q["sql"]]
    return int(windows[0].split(" LIMIT ")[1].split()[0])


@pytest.mark.django_db
def test_the_first_window_follows_the_request_once_a_job_size_is_known(
    client, project, account, cpu_app, no_job_sizes
):
    make_jobs(project, cpu_app, 40)  # 1e11 fpops: 100 s on the test host's 1 GFLOPS
    first = make_request(account.authenticator)
    assert _first_window(client, project, first) == dispatch.CANDIDATE_WINDOWS[0]  # no size known yet
    hostid = rpc(client, project, first).hostid
    ask = make_request(
        account.authenticator, hostid=hostid, rpc_seqno=2, cpu_req_secs=400.0, cpu_req_instances=0.0
    )
    assert _first_window(client, project, ask) == 8  # 4 jobs of 100 s: 4 + 1 + 2 rows, rounded up to a step
    assert math.isclose(dispatch._typical_fpops[cpu_app.id], 1e11)
