"""BOINC's names of the account pages, used by bookmarks and the BOINC Manager's links, lead to
the pages that do the same here; weak_auth.php shows the account's keys."""

from __future__ import annotations

import pytest
from lxml import html

from apps.volunteers.services.weak_keys import account_weak_key
from tests.factories import AccountFactory, ProjectFactory
from tests.portal.volunteer_helpers import PASSWORD, log_in

pytestmark = pytest.mark.django_db


@pytest.fixture
def project():
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


def test_weak_auth_php_shows_the_weak_key_and_the_account_file(client, project):
    account = AccountFactory(project=project, password=PASSWORD)
    log_in(client, account)
    response = client.get("/names/weak_auth.php")
    page = html.fromstring(response.content)
    assert page.get_element_by_id("weak-key").text_content() == account_weak_key(account)
    assert page.get_element_by_id("account-file").text_content() == "account_127.0.0.1_8000_names.xml"
    assert "no-store" in response["Cache-Control"]


def test_weak_auth_php_needs_a_log_in(client, project):
    assert client.get("/names/weak_auth.php")["Location"] == "/names/account/"


def test_the_weak_key_does_not_log_in_on_the_web(client, project):
    account = AccountFactory(project=project, password=PASSWORD)
    weak = account_weak_key(account)
    response = client.post("/names/account/", {"email": account.email_addr, "password": weak})
    assert response.status_code != 302
    assert client.get("/names/weak_auth.php").status_code == 302  # still logged out
