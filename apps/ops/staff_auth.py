"""Staff log-ins, the admin's and the API's HTTP Basic authentication, counted and limited
per client address and per user name as volunteers' log-ins are (apps.scheduler.ratelimits,
scope STAFF): a wrong password counts, a refused log-in says how long to wait.

Django's ModelBackend already checks a dummy hash for an unknown user name, so the answer
takes as long whether or not the name exists.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.backends import ModelBackend
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from drf_spectacular.authentication import BasicScheme
from rest_framework.authentication import BasicAuthentication
from rest_framework.exceptions import Throttled

from apps.scheduler.ratelimits import STAFF, login_failed, login_succeeded, login_wait, too_many_text

# The admin's log-in form shows this request attribute's text in place of "wrong password"
# (apps.core.admin_base.StaffLoginForm).
REFUSAL_ATTRIBUTE = "login_refusal"


class RateLimitedModelBackend(ModelBackend):
    """ModelBackend behind the staff log-in limits. Without a request (the shell, management
    commands) nothing is counted."""

    def authenticate(
        self,
        request: HttpRequest | None,
        username: str | None = None,
        password: str | None = None,
        **kwargs: Any,
    ) -> Any:
        if request is None or username is None:
            return super().authenticate(request, username=username, password=password, **kwargs)
        wait = login_wait(request, username, scope=STAFF)
        if wait is not None:
            setattr(request, REFUSAL_ATTRIBUTE, too_many_text(wait))
            raise PermissionDenied  # no other backend may try either
        user = super().authenticate(request, username=username, password=password, **kwargs)
        if user is None:
            login_failed(request, username, scope=STAFF)
        else:
            login_succeeded(request, username, scope=STAFF)
        return user


class RateLimitedBasicAuthentication(BasicAuthentication):
    """DRF's HTTP Basic authentication answering 429 with Retry-After once the limits refuse."""

    def authenticate_credentials(self, userid: str, password: str, request: Any = None) -> Any:
        if request is not None:
            wait = login_wait(request, userid, scope=STAFF)
            if wait is not None:
                raise Throttled(wait=wait, detail=too_many_text(wait))
        return super().authenticate_credentials(userid, password, request)


class RateLimitedBasicScheme(BasicScheme):
    """The API schema's HTTP Basic scheme (drf-spectacular knows DRF's class only by name)."""

    target_class = RateLimitedBasicAuthentication  # type: ignore[assignment]  # drf-spectacular takes a class too
