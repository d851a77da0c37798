"""Locality scheduling's failure paths: a host holding a large file vanishes, the on-demand generator fails."""

from __future__ import annotations

from datetime import timedelta

import pytest

from apps.locality.models import LocalityFile, NeedWork
from apps.locality.services import locality_work_generate
from apps.work.domain.states import Outcome
from apps.work.models import Result, Workunit
from apps.work.services import workunits_transition
from tests.locality.conftest import file_work, wu_file

pytestmark = pytest.mark.django_db


def test_the_results_of_a_host_that_vanished_with_its_file_go_to_another_host(
    loc_project, loc_app, hosts, now
):
    file_work(loc_project, loc_app, "a.dat", 1)  # one workunit, two replicas
    vanished, other = hosts.new(), hosts.new()
    [lost] = hosts.rpc(vanished, jobs=1).results
    [sent] = hosts.rpc(other, jobs=1).results
    deadline = Result.objects.get(name=lost.name).report_deadline
    late = deadline + timedelta(seconds=loc_project.report_grace_period + 1)
    workunits_transition(project=loc_project, now=late)
    assert Result.objects.get(name=lost.name).outcome == Outcome.NO_REPLY
    # The replacement goes to a host that asks, which downloads the large file for it.
    third = hosts.new()
    reply = hosts.rpc(third, jobs=1, at=late)
    assert [wu_file(r.name) for r in reply.results] == ["a.dat"]
    assert reply.results[0].name not in (lost.name, sent.name)
    assert third.downloads["a.dat"] == 1


def _failing_generator(**kwargs):
    raise RuntimeError("the generator's database is down")


def test_a_failing_generator_leaves_the_signal_pending_and_creates_nothing(
    loc_project, loc_app, now, monkeypatch
):
    file_work(loc_project, loc_app, "a.dat", 1)
    f = LocalityFile.objects.create(project=loc_project, name="a.dat", nbytes=1)
    NeedWork.objects.create(file=f, requested_time=now)
    loc_project.locality_work_generator = "tests.locality.test_failure_paths._failing_generator"
    loc_project.save(update_fields=["locality_work_generator"])
    before = Workunit.objects.count()
    with pytest.raises(RuntimeError):
        locality_work_generate(file_id=f.id, now=now)
    assert NeedWork.objects.get().handled_time is None  # answered again when the scheduler re-sends it
    assert Workunit.objects.count() == before
