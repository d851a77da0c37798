"""The operators' API asks for the same Django permissions as the admin (a staff account
given no permissions in the admin can do nothing here either)."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from apps.applications.services import app_create
from apps.projects.services import project_create
from apps.work.domain.states import SequenceState
from tests.factories import WorkSequenceFactory

pytestmark = pytest.mark.django_db

WORKUNITS = "/api/v1/projects/opsapi/workunits/"
JOB = {"appname": "sim", "jobs": [{"name": "a"}]}


@pytest.fixture
def app():
    project = project_create(slug="opsapi", name="API").project
    return app_create(project=project, name="sim")


def staff_client(client, *codenames: str):
    user = get_user_model().objects.create_user("operator", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename__in=codenames))
    client.force_login(user)
    return client


def test_staff_without_permissions_cannot_list_workunits(client, app):
    assert staff_client(client).get(WORKUNITS).status_code == 403


def test_staff_without_permissions_cannot_create_workunits(client, app):
    response = staff_client(client).post(WORKUNITS, JOB, content_type="application/json")
    assert response.status_code == 403


def test_view_permission_lists_workunits(client, app):
    assert staff_client(client, "view_workunit").get(WORKUNITS).status_code == 200


def test_view_permission_does_not_create_workunits(client, app):
    response = staff_client(client, "view_workunit").post(WORKUNITS, JOB, content_type="application/json")
    assert response.status_code == 403


def test_add_permission_creates_workunits(client, app):
    response = staff_client(client, "add_workunit").post(WORKUNITS, JOB, content_type="application/json")
    assert response.status_code == 201


def test_ending_a_sequence_needs_the_change_permission(client, app):
    WorkSequenceFactory(app=app, name="s1", state=SequenceState.UNASSIGNED)
    url = "/api/v1/projects/opsapi/sequences/s1/end/"
    assert staff_client(client, "view_worksequence", "add_worksequence").post(url).status_code == 403


def test_change_permission_ends_a_sequence(client, app):
    WorkSequenceFactory(app=app, name="s1", state=SequenceState.UNASSIGNED)
    url = "/api/v1/projects/opsapi/sequences/s1/end/"
    assert staff_client(client, "view_worksequence", "change_worksequence").post(url).status_code == 200


def test_volunteer_data_stays_public(client, app):
    assert client.get("/api/v1/projects/opsapi/users/").status_code == 200
