"""Behind nginx, Django's REMOTE_ADDR is the proxy's; this puts the client's address there."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponseBase

from apps.ops.domain.addresses import client_address, parse_networks


class ClientAddressMiddleware:
    """Replace REMOTE_ADDR with the client named by a trusted proxy's X-Forwarded-For
    (settings.TRUSTED_PROXIES), so the scheduler records each host's own address and the
    monitoring gate sees who is really asking."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
        if forwarded:
            trusted = parse_networks(tuple(settings.TRUSTED_PROXIES))
            request.META["REMOTE_ADDR"] = client_address(
                request.META.get("REMOTE_ADDR", ""), forwarded, trusted
            )
        return self.get_response(request)
