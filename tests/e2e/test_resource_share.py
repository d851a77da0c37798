"""The resource share a volunteer sets on the project preferences page reaches the stock
client in the scheduler reply: boinccmd --get_project_status shows it, and a computer at a
location with its own set shows that location's share."""

from __future__ import annotations

import pytest
from django.test import Client

from apps.hosts.models import Host
from tests.e2e.conftest import EMAIL, PASSWORD, make_e2e_project

pytestmark = [pytest.mark.boinc_client, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def _set_share(web: Client, slug: str, share: str, venue: str = "") -> None:
    data = {"resource_share": share, "use_cpu": "on", "show_hosts": "on", "stats_export_consent": "on"}
    response = web.post(f"/{slug}/account/prefs/", {**data, "venue": venue} if venue else data)
    assert response.status_code == 302, response.content[:300]


def test_the_client_shows_the_resource_share_set_on_the_web(boinc_client, base_url):
    e2e = make_e2e_project(slug="share")
    web = Client()
    web.post("/share/account/", {"email": EMAIL, "password": PASSWORD})
    _set_share(web, "share", "250")
    client = boinc_client()
    client.start("--attach_project", e2e.master_url, e2e.account.authenticator)
    client.update(e2e.master_url)
    assert client.project_status()["resource share"].startswith("250.")
    assert "resource share: 250" in client.cmd("--get_project_status").stdout

    # A computer at home runs by the home set, once the reply tells it where it is.
    _set_share(web, "share", "40", venue="home")
    Host.objects.filter(project=e2e.project).update(venue="home")
    client.update(e2e.master_url)
    assert client.project_status()["resource share"].startswith("40.")
