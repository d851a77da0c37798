"""A path under /api/ that no route matches answers JSON, as every API answer does."""

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "path",
    ["/api/v1/projects/bad.slug/workunits/", "/api/v2/projects/demo/workunits/", "/api/nothing"],
)
def test_an_unknown_api_path_is_a_json_404(client, path):
    response = client.get(path)
    assert (response.status_code, response["Content-Type"]) == (404, "application/json")
    assert response.json() == {"detail": "Not found."}


@pytest.mark.parametrize(
    ("path", "target"),
    [
        ("/api/docs", "/api/docs/"),
        ("/api/v1/projects/demo/workunits?page=2", "/api/v1/projects/demo/workunits/?page=2"),
    ],
)
def test_a_route_without_its_trailing_slash_redirects_to_it(client, path, target):
    response = client.get(path)
    assert (response.status_code, response["Location"]) == (301, target)


def test_a_post_to_an_unknown_api_path_is_a_json_404_without_a_csrf_token(client):
    response = Client(enforce_csrf_checks=True).post(
        "/api/v1/nothing/", data={}, content_type="application/json"
    )
    assert (response.status_code, response.json()) == (404, {"detail": "Not found."})
