"""The volunteer's privacy choices: the statistics export consent (asked at sign-up, ticked,
and under Project preferences) and whether the pages link their computers to them
(show_hosts); the export, the user pages and the JSON honour what was chosen."""

from __future__ import annotations

import gzip

import pytest
from lxml import etree, html

from apps.portal.stats_export import stats_dir, stats_export_write
from apps.volunteers.models import Account
from tests.factories import AccountFactory, HostFactory

pytestmark = pytest.mark.django_db

BOTH_PROCESSORS = {"resource_share": "100", "use_cpu": "on"}
CONSENT_LABEL = "Do you consent to exporting your data to BOINC statistics aggregation web sites?"


@pytest.fixture
def account(project) -> Account:
    return AccountFactory(project=project, name="Ada", email_addr="ada@example.org", password="pw123456")


@pytest.fixture
def logged_in(client, project, account):
    client.post(f"/{project.slug}/account/", {"email": account.email_addr, "password": "pw123456"})
    return client


def exported_names(project, now) -> list[str]:
    stats_export_write(project=project, now=now)
    with gzip.open(stats_dir(project) / "user.gz") as f:
        return [u.findtext("name") for u in etree.fromstring(f.read()).findall("user")]


def ticked(page: bytes, name: str) -> bool:
    [box] = html.fromstring(page).xpath(f"//input[@type='checkbox'][@name='{name}']")
    return box.checked


def label(page: bytes, name: str) -> str:
    [text] = html.fromstring(page).xpath(f"//label[@for='id_{name}']")
    return text.text_content()


def signup(client, project, **fields: str):
    data = {"name": "Grace", "email": "grace@example.org", "password": "longpassword", **fields}
    return client.post(f"/{project.slug}/signup/", data)


def test_prefs_page_asks_for_the_export_consent(logged_in, project):
    page = logged_in.get(f"/{project.slug}/account/prefs/").content
    assert label(page, "stats_export_consent") == CONSENT_LABEL
    assert ticked(page, "stats_export_consent") is True


def test_prefs_page_asks_whether_to_show_the_computers(logged_in, project):
    page = logged_in.get(f"/{project.slug}/account/prefs/").content
    assert label(page, "show_hosts") == "Show your computers on this project's web site?"
    assert ticked(page, "show_hosts") is True


def test_prefs_page_shows_consent_withdrawn(logged_in, project):
    response = logged_in.post(f"/{project.slug}/account/prefs/", {**BOTH_PROCESSORS}, follow=True)
    assert "Your preferences are saved" in response.content.decode()
    assert ticked(response.content, "stats_export_consent") is False
    assert ticked(response.content, "show_hosts") is False


def test_withdrawn_consent_leaves_the_volunteer_out_of_the_export(logged_in, project, account, now):
    logged_in.post(f"/{project.slug}/account/prefs/", {**BOTH_PROCESSORS, "show_hosts": "on"})
    assert exported_names(project, now) == []


def test_withdrawn_consent_hides_the_cpid_from_the_users_api(logged_in, client, project, account):
    logged_in.post(f"/{project.slug}/account/prefs/", {**BOTH_PROCESSORS, "show_hosts": "on"})
    assert client.get(f"/api/v1/projects/{project.slug}/users/{account.id}/").json()["cpid"] is None


def test_consent_given_again_puts_the_volunteer_back_in_the_export(logged_in, project, account, now):
    Account.objects.filter(pk=account.pk).update(stats_export_consent=False)
    logged_in.post(
        f"/{project.slug}/account/prefs/",
        {**BOTH_PROCESSORS, "show_hosts": "on", "stats_export_consent": "on"},
    )
    assert exported_names(project, now) == ["Ada"]


def test_hidden_computers_leave_the_user_page(logged_in, client, project, account):
    host = HostFactory(account=account)
    logged_in.post(f"/{project.slug}/account/prefs/", {**BOTH_PROCESSORS, "stats_export_consent": "on"})
    page = client.get(f"/{project.slug}/show_user.php?userid={account.id}").content.decode()
    assert f"hostid={host.id}" not in page


def test_privacy_choices_leave_the_processor_choices_alone(logged_in, project, account):
    Account.objects.filter(pk=account.pk).update(no_gpus=True)
    logged_in.post(f"/{project.slug}/account/prefs/", {"resource_share": "100", "use_cpu": "on"})
    account.refresh_from_db()
    assert (account.no_cpu, account.no_gpus, account.show_hosts, account.stats_export_consent) == (
        False,
        True,
        False,
        False,
    )


def test_signup_form_asks_for_the_consent_with_the_box_ticked(client, project):
    page = client.get(f"/{project.slug}/signup/").content
    assert label(page, "stats_export_consent") == CONSENT_LABEL
    assert ticked(page, "stats_export_consent") is True


def test_signup_with_the_box_ticked_is_exported(client, project, now):
    signup(client, project, stats_export_consent="on")
    assert exported_names(project, now) == ["Grace"]


def test_signup_with_the_box_unticked_is_not_exported(client, project, now):
    signup(client, project)
    assert Account.objects.get(project=project).stats_export_consent is False
    assert exported_names(project, now) == []


def test_signing_up_again_as_an_existing_account_keeps_its_choice(client, project, account):
    client.post(
        f"/{project.slug}/signup/",
        {"name": "Ada", "email": "ada@example.org", "password": "pw123456"},
    )
    account.refresh_from_db()
    assert account.stats_export_consent is True


def test_project_home_says_how_to_consent_and_withdraw(client, project):
    page = client.get(f"/{project.slug}/").content.decode()
    assert "agreed" not in page
    assert "the sign-up form asks, with the box ticked" in page
    assert f'under <a href="/{project.slug}/account/prefs/">Project preferences</a>' in page
