"""The locality admin: changelists, actions, and the per-project page."""

from __future__ import annotations

import pytest
from django.urls import reverse

from apps.locality.models import HostFile, LocalityFile, NeedWork
from apps.work.domain.states import ServerState
from apps.work.models import Result
from tests.factories import HostFactory
from tests.locality.conftest import MB, file_work

pytestmark = pytest.mark.django_db


@pytest.fixture
def populated(loc_project, loc_app, now):
    file_work(loc_project, loc_app, "a.dat", 2)
    file_work(loc_project, loc_app, "gone.dat", 1)
    a = LocalityFile.objects.create(project=loc_project, name="a.dat", nbytes=10 * MB, in_working_set=True)
    gone = LocalityFile.objects.create(
        project=loc_project, name="gone.dat", nbytes=10 * MB, files_no_work=True, no_work_since=now
    )
    NeedWork.objects.create(file=gone, requested_time=now)
    host = HostFactory(project=loc_project)
    # Two results of a.dat went to one host, which downloaded the file once.
    for result in Result.objects.filter(workunit__locality_file_name="a.dat").order_by("id")[:2]:
        result.host, result.sent_time, result.server_state = host, now, ServerState.IN_PROGRESS
        result.save()
    HostFile.objects.create(
        host=host, file=a, first_seen=now, last_seen=now, sent_by_scheduler=True, downloads=1
    )
    Result.objects.filter(workunit__locality_file_name="gone.dat").update(server_state=ServerState.OVER)
    return loc_project


def test_project_page_shows_working_set_files_signals_and_bytes(admin_client, populated):
    response = admin_client.get(reverse("admin:locality_project", args=[populated.pk]))
    assert response.status_code == 200
    overview = response.context["overview"]
    assert [f.name for f in overview.working_set] == ["a.dat"]
    assert [f.name for f in overview.with_work] == ["a.dat"]
    assert [f.name for f in overview.without_work] == ["gone.dat"]
    assert [n.file_name for n in overview.pending_need_work] == ["gone.dat"]
    assert (overview.savings.bytes_sent, overview.savings.baseline_bytes) == (10 * MB, 20 * MB)
    assert overview.measured_bytes_sent == 10 * MB
    html = response.content.decode()
    assert 'id="bytes-baseline">20,000,000' in html


def test_index_lists_locality_projects(admin_client, populated):
    response = admin_client.get(reverse("admin:locality_index"))
    assert response.status_code == 200
    assert reverse("admin:locality_project", args=[populated.pk]) in response.content.decode()


@pytest.mark.parametrize("model", ["localityfile", "hostfile", "needwork"])
def test_changelists_load(admin_client, populated, model):
    assert admin_client.get(reverse(f"admin:locality_{model}_changelist")).status_code == 200


def test_mark_no_work_available_action(admin_client, populated):
    file = LocalityFile.objects.get(name="a.dat")
    response = admin_client.post(
        reverse("admin:locality_localityfile_changelist"),
        {"action": "mark_no_work_available", "_selected_action": [file.pk]},
    )
    assert response.status_code == 302
    file.refresh_from_db()
    assert file.no_work_available is True


def test_refresh_working_set_action(admin_client, populated):
    file = LocalityFile.objects.get(name="a.dat")
    admin_client.post(
        reverse("admin:locality_localityfile_changelist"),
        {"action": "refresh_working_set", "_selected_action": [file.pk]},
    )
    assert LocalityFile.objects.get(name="gone.dat").in_working_set is False
    assert LocalityFile.objects.get(name="a.dat").in_working_set is True


def test_first_delivery_bytes_leave_out_hosts_that_already_held_the_file(admin_client, populated, now):
    holder = HostFactory(project=populated)
    a = LocalityFile.objects.get(name="a.dat")
    HostFile.objects.create(host=holder, file=a, first_seen=now, last_seen=now)  # reported, never sent
    result = Result.objects.filter(workunit__locality_file_name="a.dat", host__isnull=True).first()
    result.host, result.sent_time, result.server_state = holder, now, ServerState.IN_PROGRESS
    result.save()
    overview = admin_client.get(reverse("admin:locality_project", args=[populated.pk])).context["overview"]
    # Three results sent with a.dat, to two hosts; only the first host downloaded it.
    assert (overview.savings.deliveries, overview.savings.bytes_sent) == (3, 10 * MB)
    assert overview.savings.baseline_bytes == 30 * MB
