"""BOINC's names of the account pages, used by bookmarks and the BOINC Manager's links, lead to
the pages that do the same here."""

from __future__ import annotations

import pytest

from tests.factories import ProjectFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def project():  # type: ignore[no-untyped-def]
    return ProjectFactory(slug="names")


@pytest.mark.parametrize(
    ("boinc_page", "here"),
    [
        ("home.php", "/names/account/"),
        ("edit_user_info_form.php", "/names/edit_user_info.php"),
        ("edit_email_form.php", "/names/edit_email.php"),
        ("edit_passwd_form.php", "/names/edit_passwd.php"),
    ],
)
def test_boincs_page_name_redirects_to_the_page_here(client, project, boinc_page, here):
    response = client.get(f"/names/{boinc_page}")
    assert (response.status_code, response["Location"]) == (302, here)


def test_the_query_string_goes_along(client, project):
    assert client.get("/names/home.php?x=1")["Location"] == "/names/account/?x=1"


def test_a_redirect_ends_on_a_page_not_a_404(client, project):
    assert client.get("/names/edit_passwd_form.php", follow=True).status_code == 200
