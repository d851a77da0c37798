"""The admin index's list of project dashboards."""

from __future__ import annotations

from typing import Any

from django import template

from apps.projects.models import Project

register = template.Library()


@register.simple_tag(takes_context=True)
def project_dashboards(context: dict[str, Any]) -> list[Project]:
    """Every project, for an admin who may see projects (the dashboard asks the same)."""
    request = context.get("request")
    user = getattr(request, "user", None)
    if user is None or not user.has_perm("projects.view_project"):
        return []
    return list(Project.objects.order_by("name"))
