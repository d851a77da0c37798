"""The admin app with the project's site (settings: ``INSTALLED_APPS``, in place of
``django.contrib.admin``). Kept apart from ``admin_base``: INSTALLED_APPS imports this module
before any model may be imported."""

from django.contrib.admin.apps import AdminConfig


class GuardedAdminConfig(AdminConfig):
    default_site = "apps.core.admin_base.GuardedAdminSite"
