"""The hosts admin's block and unblock actions."""

from __future__ import annotations

import pytest

from apps.hosts.models import Host
from tests.factories import HostFactory

pytestmark = pytest.mark.django_db


def test_block_action_blocks_the_selected_hosts_only(admin_client):
    chosen, other = HostFactory(), HostFactory()
    response = admin_client.post(
        "/admin/hosts/host/", {"action": "block", "_selected_action": [chosen.pk]}, follow=True
    )
    assert "1 host(s) blocked." in response.content.decode()
    assert set(Host.objects.filter(blacklisted=True).values_list("id", flat=True)) == {chosen.pk}
    assert other.pk not in Host.objects.filter(blacklisted=True).values_list("id", flat=True)


def test_unblock_action_lets_the_host_in_again(admin_client):
    host = HostFactory(blacklisted=True)
    admin_client.post("/admin/hosts/host/", {"action": "unblock", "_selected_action": [host.pk]})
    host.refresh_from_db()
    assert host.blacklisted is False
