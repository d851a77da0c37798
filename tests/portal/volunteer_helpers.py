"""Helpers of the volunteer page tests: a project, and a volunteer logged in to it."""

from __future__ import annotations

from django.test import Client

from apps.volunteers.models import Account

PASSWORD = "correct horse"


def log_in(client: Client, account: Account, password: str = PASSWORD) -> None:
    """Log in through the project's log-in page, as a volunteer does."""
    response = client.post(
        f"/{account.project.slug}/account/", {"email": account.email_addr, "password": password}
    )
    assert response.status_code == 302, response.content[:300]
