"""Who may read /metrics and the detailed /health/ report."""

from __future__ import annotations

import hmac

from django.conf import settings
from django.http import HttpRequest

from apps.ops.domain.addresses import address_in, parse_networks


def monitoring_allowed(request: HttpRequest) -> bool:
    """A client in MONITORING_ALLOWED_NETWORKS (loopback by default), or one presenting
    ``Authorization: Bearer <MONITORING_TOKEN>`` when a token is set."""
    token = settings.MONITORING_TOKEN
    if token:
        offered = request.headers.get("Authorization", "")
        if hmac.compare_digest(offered.encode(), f"Bearer {token}".encode()):
            return True
    networks = parse_networks(tuple(settings.MONITORING_ALLOWED_NETWORKS))
    return address_in(request.META.get("REMOTE_ADDR", ""), networks)
