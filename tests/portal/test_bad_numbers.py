"""Numbers in the query strings of public pages: anything that is not one never gives a 500."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from tests.factories import HostFactory, ProjectFactory

pytestmark = pytest.mark.django_db

NOT_INTEGERS = ["--1", "\u00b2", "1.5", "", "abc"]
LONG_NUMBER = "1" * 5000  # past int()'s 4,300 digits


@pytest.fixture
def project():
    return ProjectFactory(slug="bn")


@pytest.mark.parametrize("value", NOT_INTEGERS)
def test_server_status_with_a_non_integer_xml_is_the_html_page(client, project, value):
    response = client.get(f"/bn/server_status.php?xml={quote(value)}")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/html")


@pytest.mark.parametrize("value", ["1", "-1", "+2", "007", LONG_NUMBER])
def test_server_status_with_a_non_zero_xml_is_the_xml_export(client, project, value):
    response = client.get(f"/bn/server_status.php?xml={quote(value)}")
    assert response["Content-Type"].startswith("text/xml")


@pytest.mark.parametrize("value", ["0", "-0", "000"])
def test_server_status_with_xml_zero_is_the_html_page(client, project, value):
    response = client.get(f"/bn/server_status.php?xml={quote(value)}")
    assert response["Content-Type"].startswith("text/html")


@pytest.mark.parametrize("value", [*NOT_INTEGERS, LONG_NUMBER, str(2**70), "-" + str(2**70)])
@pytest.mark.parametrize(
    "page", ["show_user.php?userid=", "show_host_detail.php?hostid=", "team_display.php?teamid="]
)
def test_volunteer_pages_with_a_bad_id_are_404(client, project, page, value):
    HostFactory(account__project=project)
    assert client.get(f"/bn/{page}{quote(value)}").status_code == 404


@pytest.mark.parametrize("value", [*NOT_INTEGERS, LONG_NUMBER, str(2**70)])
@pytest.mark.parametrize("kind", ["users", "hosts", "teams"])
def test_public_json_with_a_bad_id_is_404(client, project, kind, value):
    assert client.get(f"/api/v1/projects/bn/{kind}/{quote(value, safe='')}/").status_code == 404
