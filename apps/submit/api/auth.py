"""Submitters' authentication to the JSON API: ``Authorization: Token <authenticator>``, the
account key BOINC's remote-submission clients send in their requests, for the project named
in the URL. A wrong key counts as a failed log-in under the same limits as the XML RPCs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.exceptions import AuthenticationFailed, Throttled
from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from apps.scheduler.ratelimits import login_failed, login_succeeded, login_wait, too_many_text
from apps.submit.models import UserSubmit
from apps.submit.services.permissions import authenticator_identity
from apps.volunteers.models import Account

KEYWORD = "Token"


@dataclass(frozen=True)
class Submitter:
    """``request.user`` of the submitters' API: the account and its submitter row."""

    account: Account
    submit: UserSubmit
    is_authenticated: bool = True


class AuthenticatorAuthentication(BaseAuthentication):
    def authenticate(self, request: Request) -> tuple[Submitter, str] | None:
        parts = get_authorization_header(request).split()
        if not parts or parts[0].lower() != KEYWORD.lower().encode():
            return None
        if len(parts) != 2:
            raise AuthenticationFailed("give the account key as: Authorization: Token <authenticator>")
        try:
            key = parts[1].decode("ascii")
        except UnicodeDecodeError:
            raise AuthenticationFailed("bad authenticator") from None
        slug = (request.parser_context or {}).get("kwargs", {}).get("slug", "")
        http = request._request
        identity = authenticator_identity(key)
        wait = login_wait(http, identity)
        if wait is not None:
            raise Throttled(wait=wait, detail=too_many_text(wait))
        account = Account.objects.filter(project__slug=slug, authenticator=key).first()
        if account is None:
            login_failed(http, identity)
            raise AuthenticationFailed("bad authenticator")
        login_succeeded(http, identity)
        submit = UserSubmit.objects.filter(account=account).first()
        if submit is None:
            raise AuthenticationFailed("this account may not submit jobs")
        return Submitter(account, submit), key

    def authenticate_header(self, request: Request) -> str:
        return KEYWORD


class IsSubmitter(BasePermission):
    def has_permission(self, request: Any, view: Any) -> bool:
        return isinstance(request.user, Submitter)


class AuthenticatorScheme(OpenApiAuthenticationExtension):
    target_class = AuthenticatorAuthentication
    name = "submitterToken"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": "Token <the account's authenticator>",
        }
