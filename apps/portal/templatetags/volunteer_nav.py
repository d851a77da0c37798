"""The project navigation, which knows whether the visitor is logged in to the project."""

from __future__ import annotations

from typing import Any

from django import template

from apps.projects.models import Project
from apps.volunteers.sessions import session_account

register = template.Library()


@register.inclusion_tag("portal/nav_links.html", takes_context=True)
def project_nav(context: dict[str, Any], project: Project) -> dict[str, Any]:
    request = context.get("request")
    me = session_account(request, project) if request is not None else None
    return {"project": project, "me": me}
