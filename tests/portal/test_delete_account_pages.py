"""The account deletion pages: request with the password, the mailed link, cancel; the admin's
action; what others see of a deleted account."""

from __future__ import annotations

import re

import pytest
from django.core import mail
from django.test import override_settings

from apps.account_deletion.services import account_delete
from apps.core import clock
from apps.volunteers.models import Account, Team
from tests.factories import AccountFactory, ProjectFactory, TeamFactory
from tests.portal.volunteer_helpers import PASSWORD, log_in

pytestmark = pytest.mark.django_db


@pytest.fixture
def ada(db):
    return AccountFactory(
        project=ProjectFactory(slug="dl"), name="Ada", email_addr="ada@example.com", password=PASSWORD
    )


def link() -> str:
    [message] = mail.outbox
    return re.search(r"(/dl/delete_account_confirm\.php\?token=\S+)", message.body).group(1)


def request_deletion(client, password: str = PASSWORD):
    return client.post("/dl/delete_account_request.php", {"password": password})


def test_the_account_page_links_to_the_deletion_page(client, ada):
    log_in(client, ada)
    assert (
        'href="/dl/delete_account_request.php" id="delete-account"'
        in client.get("/dl/account/").content.decode()
    )


def test_the_request_mails_a_confirmation_link_to_the_account(client, ada):
    log_in(client, ada)
    response = request_deletion(client)
    assert 'id="delete-sent"' in response.content.decode()
    assert mail.outbox[0].to == ["ada@example.com"]
    assert link()


def test_a_wrong_password_is_refused_counted_and_mails_nothing(client, ada, monkeypatch):
    failed: list[str] = []
    monkeypatch.setattr("apps.portal.delete_views.login_failed", lambda request, email: failed.append(email))
    log_in(client, ada)
    response = request_deletion(client, "guess")
    assert "Wrong password." in response.content.decode()
    assert (failed, mail.outbox) == (["ada@example.com"], [])


@override_settings(COBBLESTONE_RATELIMIT_RESET_MAIL_ADDRESS="1/h")
def test_requests_past_the_address_limit_are_refused_and_the_link_sent_keeps_working(client, ada):
    log_in(client, ada)
    request_deletion(client)
    response = request_deletion(client)
    assert response.status_code == 429
    assert len(mail.outbox) == 1
    client.post("/dl/delete_account_confirm.php", {"token": link().split("token=")[1]})
    assert Account.objects.get(pk=ada.pk).delete_after is not None


@override_settings(COBBLESTONE_ACCOUNT_DELETE_GRACE_DAYS=7)
def test_the_link_schedules_the_deletion_and_the_page_offers_to_keep_the_account(client, ada):
    log_in(client, ada)
    request_deletion(client)
    token = link().split("token=")[1]
    assert 'id="delete-confirm"' in client.get(link()).content.decode()
    page = client.post("/dl/delete_account_confirm.php", {"token": token}, follow=True).content.decode()
    assert 'id="delete-scheduled"' in page
    assert Account.objects.get(pk=ada.pk).delete_after is not None


def test_keeping_the_account_cancels_the_deletion(client, ada):
    log_in(client, ada)
    request_deletion(client)
    client.post("/dl/delete_account_confirm.php", {"token": link().split("token=")[1]})
    page = client.post("/dl/delete_account_cancel.php", follow=True).content.decode()
    assert "Your account will not be deleted." in page
    assert Account.objects.get(pk=ada.pk).delete_after is None


def test_a_replayed_link_gets_a_clear_error(client, ada):
    log_in(client, ada)
    request_deletion(client)
    token = link().split("token=")[1]
    client.post("/dl/delete_account_confirm.php", {"token": token})
    client.post("/dl/delete_account_cancel.php")
    response = client.post("/dl/delete_account_confirm.php", {"token": token})
    assert response.status_code == 400
    assert "used already" in response.content.decode()


def test_another_accounts_link_gets_a_clear_error_and_changes_nothing(client, ada):
    bob = AccountFactory(project=ada.project, password=PASSWORD)
    log_in(client, bob)
    request_deletion(client)
    token = link().split("token=")[1]
    other = client.__class__()
    log_in(other, ada)
    response = other.post("/dl/delete_account_confirm.php", {"token": token})
    assert response.status_code == 400
    assert "This link is for another account" in response.content.decode()
    assert Account.objects.filter(delete_after__isnull=False).count() == 0


@override_settings(COBBLESTONE_ACCOUNT_DELETE_GRACE_DAYS=0)
def test_with_no_grace_period_the_account_is_deleted_and_logged_out(client, ada):
    log_in(client, ada)
    request_deletion(client)
    page = client.post("/dl/delete_account_confirm.php", {"token": link().split("token=")[1]})
    assert 'id="account-deleted"' in page.content.decode()
    assert client.get("/dl/delete_account_request.php").status_code == 302  # the session is gone


def test_a_deleted_user_leaves_the_top_list_and_their_page(client, ada):
    account_delete(account_id=ada.pk, now=clock.now())
    assert "Ada" not in client.get("/dl/top_users.php").content.decode()
    assert client.get(f"/dl/show_user.php?userid={ada.pk}").status_code == 404
    assert b"<error>" in client.get(f"/dl/show_user.php?userid={ada.pk}&format=xml").content


def test_the_team_keeps_its_credit_and_loses_the_member(client, ada):
    team = TeamFactory(project=ada.project, total_credit=500.0)
    Account.objects.filter(pk=ada.pk).update(team=team)
    account_delete(account_id=ada.pk, now=clock.now())
    page = client.get(f"/dl/team_display.php?teamid={team.pk}").content.decode()
    assert "Ada" not in page
    assert Team.objects.get(pk=team.pk).total_credit == 500.0


def test_the_admin_action_deletes_the_selected_accounts(admin_client, ada):
    response = admin_client.post(
        "/admin/volunteers/account/",
        {"action": "delete_accounts", "_selected_action": [ada.pk]},
        follow=True,
    )
    assert "1 accounts deleted." in response.content.decode()
    assert Account.objects.get(pk=ada.pk).name == "deleted"
