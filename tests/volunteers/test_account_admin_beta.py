"""The admin shows and filters the volunteers' "Run test applications?" preference."""

from __future__ import annotations

import pytest

from tests.factories import AccountFactory

pytestmark = pytest.mark.django_db


def test_account_changelist_offers_the_allow_beta_work_filter(admin_client):
    AccountFactory()
    page = admin_client.get("/admin/volunteers/account/").content.decode()
    assert 'data-filter-title="allow beta work"' in page
    assert 'href="?allow_beta_work__exact=1"' in page


def test_account_change_form_has_the_allow_beta_work_box(admin_client):
    account = AccountFactory()
    page = admin_client.get(f"/admin/volunteers/account/{account.pk}/change/").content.decode()
    assert 'name="allow_beta_work"' in page
