"""The project home's statistics-export links: listed only once the daily export (db_dump) has
written the files, so a statistics site never follows a link to a missing file."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from lxml import html

from tests.factories import AccountFactory, ProjectFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def project():
    project = ProjectFactory(slug="export", name="Export Project")
    AccountFactory(project=project, name="Ada", total_credit=12.5)
    return project


def home(client, project):
    return html.fromstring(client.get(f"/{project.slug}/").content)


def export_links(page) -> list[str]:
    return page.xpath('//ul[@id="stats-files"]//a/@href')


def db_dump(project) -> None:
    call_command("db_dump", "--project", project.slug, stdout=StringIO())


def test_before_the_first_export_the_home_page_says_when_the_files_will_appear(client, project):
    page = home(client, project)
    assert export_links(page) == []
    [note] = page.xpath('//*[@id="stats-not-yet"]')
    assert "once it has run for the first time" in note.text_content()


def test_after_the_export_the_home_page_links_every_file_instead_of_the_note(client, project):
    db_dump(project)
    page = home(client, project)
    assert page.xpath('//*[@id="stats-not-yet"]') == []
    assert export_links(page) == [
        f"/export/stats/{name}"
        for name in ("tables.xml", "user.gz", "host.gz", "team.gz", "user_deleted.gz", "host_deleted.gz")
    ]


def test_every_export_link_on_the_home_page_downloads_its_file(client, project):
    db_dump(project)
    statuses, bodies = {}, {}
    for href in export_links(home(client, project)):
        response = client.get(href)
        statuses[href] = response.status_code
        bodies[href] = b"".join(response.streaming_content)
    assert list(statuses.values()) == [200] * 6
    assert b"<nusers_total>1</nusers_total>" in bodies["/export/stats/tables.xml"]
