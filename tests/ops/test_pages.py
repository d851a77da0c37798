"""Production pages: the 404 and 500 pages, and the API docs served from installed files (no CDN)."""

from __future__ import annotations

import re

import pytest
from django.test import RequestFactory
from django.views.defaults import server_error


@pytest.mark.django_db
def test_an_unknown_page_gets_the_sites_404_page_with_its_stylesheet(client):
    response = client.get("/no-such-project/")
    assert response.status_code == 404
    text = response.content.decode()
    assert "<h1>Page not found</h1>" in text
    assert '<link rel="stylesheet" href="/static/portal/site.css">' in text


def test_the_500_page_renders_without_the_database():
    # No django_db mark: pytest-django fails any query, so the page must need none.
    response = server_error(RequestFactory().get("/admin/"))
    assert response.status_code == 500
    text = response.content.decode()
    assert "<h1>Server error</h1>" in text
    assert "<style>" in text  # styled without fetching anything


@pytest.mark.django_db
def test_the_api_docs_load_swagger_ui_from_this_server(admin_client):
    response = admin_client.get("/api/docs/")
    assert response.status_code == 200
    text = response.content.decode()
    assets = re.findall(r'(?:src|href)="([^"]+)"', text)
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in assets
    assert [a for a in assets if not a.startswith("/")] == []  # nothing from another host
    assert not re.search(r"\bcdn\b|cdn\.", text)  # a word, not letters inside a random token
