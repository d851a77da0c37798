"""Admin pieces shared by several apps."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest


class RecordAdmin(admin.ModelAdmin):
    """Rows the system writes (records of what happened): admins read and may delete them,
    never add or edit them."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
