"""Create the portal's admin login once and print it."""

from __future__ import annotations

import os
import secrets
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.urls import reverse

from apps.core.private_files import private_write


class Command(BaseCommand):
    help = "Create the 'admin' superuser if missing (password from ADMIN_PASSWORD or generated) and print it."

    def handle(self, *args: Any, **opts: Any) -> None:
        user_model = get_user_model()
        pw_file = settings.VAR_DIR / "admin-password.txt"
        password = os.environ.get("ADMIN_PASSWORD") or (
            pw_file.read_text().strip() if pw_file.exists() else ""
        )
        if not password:
            password = secrets.token_urlsafe(12)
        user = user_model.objects.filter(username="admin").first()
        if user is None:
            user_model.objects.create_superuser("admin", "admin@example.com", password)
            pw_file.parent.mkdir(parents=True, exist_ok=True)
            private_write(pw_file, password + "\n")
        elif not pw_file.exists() or not user.check_password(password):
            self.stdout.write(
                "Admin login: user 'admin' exists (password unchanged; see var/admin-password.txt)."
            )
            return
        # The public base the portal is served under, as every project URL is.
        url = settings.COBBLESTONE_BASE_URL + reverse("admin:index")
        self.stdout.write(self.style.SUCCESS(f"Admin login: {url}  user 'admin'  password '{password}'"))
