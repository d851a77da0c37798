"""Public JSON of the volunteer pages: users, hosts and teams, sorted like the top lists."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from rest_framework import viewsets
from rest_framework.permissions import AllowAny

from apps.portal import volunteer_selectors as sel
from apps.portal.api.serializers import HostSerializer, TeamSerializer, UserSerializer
from apps.projects.models import Project


class _PublicReadOnly(viewsets.ReadOnlyModelViewSet):
    """?sort_by=total for total credit; recent average credit otherwise (as the pages)."""

    permission_classes = [AllowAny]
    authentication_classes: list = []
    selector = staticmethod(sel.top_accounts)

    def get_queryset(self):  # type: ignore[no-untyped-def]
        project = get_object_or_404(Project, slug=self.kwargs["slug"])
        order = "total" if self.request.query_params.get("sort_by") in ("total", "total_credit") else "recent"
        return self.selector(project, order)


class UserViewSet(_PublicReadOnly):
    serializer_class = UserSerializer
    selector = staticmethod(sel.top_accounts)


class HostViewSet(_PublicReadOnly):
    serializer_class = HostSerializer
    selector = staticmethod(sel.top_hosts)


class TeamViewSet(_PublicReadOnly):
    serializer_class = TeamSerializer
    selector = staticmethod(sel.top_teams)
