"""The pure rules: fair-share clocks and a batch's progress."""

from __future__ import annotations

from apps.submit.domain.fairshare import PRIORITY_EPOCH, allocate, end_time_priority, project_flops, share
from apps.submit.domain.progress import JobCounts, next_state, progress
from apps.submit.domain.states import BatchState

NOW = 1_800_000_000.0


def test_each_job_moves_the_clock_by_its_flops_over_the_submitters_speed():
    a = allocate([1e12, 3e12], clock=0, now=NOW, share_of_project=0.5, flops_per_second=1e9)
    assert (a.logical_start_time, a.logical_end_time) == (NOW, NOW + 8000)
    assert a.priorities == (end_time_priority(NOW + 2000), end_time_priority(NOW + 8000))


def test_a_clock_ahead_of_now_goes_on_from_where_it_was():
    a = allocate([1e12], clock=NOW + 500, now=NOW, share_of_project=1, flops_per_second=1e9)
    assert a.logical_end_time == NOW + 1500


def test_an_earlier_end_time_is_a_higher_priority():
    assert end_time_priority(NOW) > end_time_priority(NOW + 1) == -int(NOW + 1 - PRIORITY_EPOCH)


def test_a_submitter_without_quota_has_no_share():
    assert (share(0, 5), share(1, 4)) == (0.0, 0.25)


def test_the_project_speed_has_a_floor_of_a_gigaflops():
    assert (project_flops(0), project_flops(400)) == (1e9, 2e9)


def test_a_batch_with_every_job_decided_but_one_unassimilated_is_not_complete():
    counts = JobCounts(njobs=4, success=3, errors=1, in_progress=0, unassimilated=1)
    assert next_state(BatchState.IN_PROGRESS, progress(counts, elapsed=10)) == BatchState.IN_PROGRESS


def test_a_batch_completes_once_every_job_is_decided_and_assimilated():
    prog = progress(JobCounts(njobs=4, success=3, errors=1, in_progress=0, unassimilated=0), elapsed=10)
    assert (prog.fraction_done, next_state(BatchState.IN_PROGRESS, prog)) == (1.0, BatchState.COMPLETE)


def test_the_rest_of_a_batch_is_estimated_at_the_pace_so_far():
    counts = JobCounts(4, 1, 0, 1, 0, fpops_total=4e12, fpops_done=1e12)
    assert progress(counts, elapsed=100).seconds_left == 300


def test_an_aborted_batch_keeps_its_state():
    prog = progress(JobCounts(njobs=1, success=1, errors=0, in_progress=0, unassimilated=0), elapsed=1)
    assert next_state(BatchState.ABORTED, prog) == BatchState.ABORTED
