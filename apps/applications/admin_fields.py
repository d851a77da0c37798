"""Admin form fields shared by every form that picks an app."""

from __future__ import annotations

from django import forms

from apps.applications.models import App


def app_label(app: App) -> str:
    """An app as "project / app", as create_work's --project and --appname name it."""
    return f"{app.project.slug} / {app.name}"


class ProjectAppChoiceField(forms.ModelChoiceField):
    """Apps as "project / app": every project may have its own "sim"."""

    def label_from_instance(self, obj: App) -> str:
        return app_label(obj)


def app_choices() -> forms.ModelChoiceField:
    """The current apps of every project, by project then name."""
    return ProjectAppChoiceField(
        queryset=App.objects.select_related("project")
        .filter(deprecated=False)
        .order_by("project__slug", "name")
    )
