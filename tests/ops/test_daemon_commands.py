"""start, stop and status: BOINC's bin/start, bin/stop and bin/status on the paused-daemons switch."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from apps.ops.daemons import DAEMON_NAMES
from apps.ops.management.commands import status as status_command
from apps.projects.models import Project
from tests.scheduler.conftest import make_request, rpc

pytestmark = pytest.mark.django_db


def test_stop_pauses_every_daemon_and_the_scheduler_answers_project_down(client, project, account):
    out = StringIO()
    call_command("stop", "--project", "ops", stdout=out)
    project.refresh_from_db()
    assert project.sched_stopped is True
    assert set(project.paused_daemons) == set(DAEMON_NAMES)
    assert out.getvalue() == "ops: scheduler and daemons stopped\n"
    assert rpc(client, project, make_request(account.authenticator)).project_is_down is True


def test_start_resumes_them(client, project, account):
    call_command("stop", "--project", "ops")
    call_command("start", "--project", "ops")
    project.refresh_from_db()
    assert project.sched_stopped is False
    assert project.paused_daemons == []
    assert rpc(client, project, make_request(account.authenticator)).project_is_down is False


def test_naming_daemons_pauses_only_those_and_leaves_the_scheduler(project):
    call_command("stop", "--project", "ops", "--daemon", "validator", "--daemon", "assimilator")
    project.refresh_from_db()
    assert project.sched_stopped is False
    assert project.paused_daemons == ["validator", "assimilator"]


def test_an_unknown_daemon_or_project_is_refused_and_nothing_changes(project):
    with pytest.raises(CommandError, match="unknown daemon"):
        call_command("stop", "--project", "ops", "--daemon", "validatr")
    with pytest.raises(CommandError, match="no project nosuch"):
        call_command("stop", "--project", "nosuch")
    project.refresh_from_db()
    assert (project.sched_stopped, project.paused_daemons) == (False, [])


def test_status_shows_each_daemon_and_exits_1_when_a_daemon_is_overdue(project, monkeypatch):
    monkeypatch.setattr(status_command, "celery_workers_answering", lambda: ["worker1@host"])
    Project.objects.filter(pk=project.pk).update(create_time=timezone.now() - timedelta(hours=1))
    out = StringIO()
    with pytest.raises(SystemExit) as exit_info:
        call_command("status", stdout=out)
    assert exit_info.value.code == 1
    text = out.getvalue()
    assert "ops (Ops Test): scheduler running" in text
    assert "  transitioner        not running   never" in text
    assert "  update_stats        first pass due" in text  # daily: not due in the first hour
    assert "  working_set         not used" in text  # not a locality project
    assert "Celery workers answering: worker1@host" in text


def test_status_of_a_new_project_waits_for_the_first_passes(project, monkeypatch):
    monkeypatch.setattr(status_command, "celery_workers_answering", lambda: ["worker1@host"])
    out = StringIO()
    call_command("status", stdout=out)  # exit status 0
    assert "  transitioner        first pass due" in out.getvalue()


def test_status_exits_1_when_no_worker_answers(project, monkeypatch):
    monkeypatch.setattr(status_command, "celery_workers_answering", lambda: [])
    out = StringIO()
    with pytest.raises(SystemExit):
        call_command("status", stdout=out)
    assert "Celery workers answering: none" in out.getvalue()


def test_status_exits_0_when_the_daemons_ran_and_a_worker_answers(project, monkeypatch):
    monkeypatch.setattr(status_command, "celery_workers_answering", lambda: ["worker1@host"])
    call_command("stop", "--project", "ops", "--daemon", "update_stats", "--daemon", "db_dump")
    call_command("run_daemons", "--once")  # a recorded pass of every other daemon
    out = StringIO()
    call_command("status", stdout=out)  # no SystemExit: exit status 0
    assert "  update_stats        disabled" in out.getvalue()
    assert "  validator           running       0" in out.getvalue()
