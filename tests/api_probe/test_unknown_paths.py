"""A path under /api/ that no route matches answers JSON, as every API answer does."""

import pytest

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "path",
    ["/api/v1/projects/bad.slug/workunits/", "/api/v2/projects/demo/workunits/", "/api/nothing"],
)
def test_an_unknown_api_path_is_a_json_404(client, path):
    response = client.get(path)
    assert (response.status_code, response["Content-Type"]) == (404, "application/json")
    assert response.json() == {"detail": "Not found."}
