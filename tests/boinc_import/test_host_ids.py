"""Clients of a project imported with shifted host ids still send the old ids: the scheduler
finds their hosts and tells them the new ids (no MariaDB needed: the shift is set here)."""

from __future__ import annotations

import pytest

from apps.hosts.models import Host
from apps.projects.services import project_create
from tests.factories import AccountFactory, HostFactory
from tests.scheduler.conftest import make_request, rpc

pytestmark = pytest.mark.django_db

OLD_ID, OFFSET = 7, 1000


@pytest.fixture
def project():
    return project_create(slug="shifted", name="Shifted").project


@pytest.fixture
def imported_host(project):
    project.boinc_hostid_offset, project.boinc_hostid_max = OFFSET, 50
    project.save()
    account = AccountFactory(project=project)
    return HostFactory(
        id=OLD_ID + OFFSET, project=project, account=account, rpc_seqno=10, host_cpid="cpid-test"
    )


def test_an_old_host_id_reaches_the_shifted_host_and_the_client_is_told_the_new_one(
    client, project, imported_host
):
    reply = rpc(
        client, project, make_request(imported_host.account.authenticator, hostid=OLD_ID, rpc_seqno=11)
    )
    assert reply.hostid == OLD_ID + OFFSET
    assert list(Host.objects.filter(project=project).values_list("pk", flat=True)) == [OLD_ID + OFFSET]


def test_the_new_id_is_used_as_it_is(client, project, imported_host):
    reply = rpc(
        client,
        project,
        make_request(imported_host.account.authenticator, hostid=OLD_ID + OFFSET, rpc_seqno=11),
    )
    assert reply.hostid is None


def test_only_ids_up_to_the_imported_maximum_are_mapped(project):
    project.boinc_hostid_offset, project.boinc_hostid_max = OFFSET, 50
    assert [project.host_id_from_client(i) for i in (0, 1, 50, 51, OFFSET + 51)] == [
        0,
        1 + OFFSET,
        50 + OFFSET,
        51,
        OFFSET + 51,
    ]


def test_a_project_that_was_not_shifted_maps_nothing(project):
    assert project.host_id_from_client(OLD_ID) == OLD_ID
