import pytest

from tests.factories import AppVersionFactory, ProjectFactory

pytestmark = pytest.mark.django_db


def test_home_page_lists_projects_with_their_master_urls(client):
    ProjectFactory(slug="alpha", name="Alpha Project")
    response = client.get("/")
    assert response.status_code == 200
    assert b"Alpha Project" in response.content
    assert b"http://127.0.0.1:8000/alpha/" in response.content


def test_master_page_has_the_scheduler_link_tag_the_client_scrapes(client):
    ProjectFactory(slug="alpha")
    body = client.get("/alpha/").content.decode()
    assert '<link rel="boinc_scheduler" href="http://127.0.0.1:8000/alpha/cgi">' in body


def test_master_page_has_the_scheduler_element_on_its_own_line(client):
    ProjectFactory(slug="alpha")
    lines = client.get("/alpha/").content.decode().splitlines()
    assert "<!-- <scheduler>http://127.0.0.1:8000/alpha/cgi</scheduler> -->" in lines


def test_master_page_lists_app_versions(client):
    version = AppVersionFactory(
        app__project__slug="alpha", app__user_friendly_name="Protein folder", plan_class="cuda"
    )
    body = client.get("/alpha/").content.decode()
    assert "Protein folder" in body
    assert f"{version.platform.name} 1.00 (cuda)" in body


def test_unknown_project_is_a_404(client):
    assert client.get("/nope/").status_code == 404


def test_admin_dashboard_shows_server_status_counts(admin_client):
    from tests.factories import ResultFactory

    result = ResultFactory()
    ResultFactory(workunit=result.workunit)
    response = admin_client.get(f"/admin/projects/project/{result.project_id}/dashboard/")
    assert response.status_code == 200
    assert '<td id="results-unsent">2</td>' in response.content.decode()
