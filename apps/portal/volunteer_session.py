"""The logged-in volunteer of a project's pages (the session of apps.volunteers.sessions)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.http import Http404, HttpRequest
from django.http.response import HttpResponseBase
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse

from apps.projects.models import Project
from apps.volunteers.models import Account
from apps.volunteers.sessions import session_account

AccountView = Callable[..., HttpResponseBase]


def volunteer_required(view: AccountView) -> Callable[..., HttpResponseBase]:
    """The view gets (request, project, account); a visitor not logged in to the project is
    sent to its log-in page."""

    @functools.wraps(view)
    def wrapper(request: HttpRequest, slug: str, *args: Any, **kwargs: Any) -> HttpResponseBase:
        project = get_object_or_404(Project, slug=slug)
        account = session_account(request, project)
        if account is None:
            messages.info(request, "Log in to your account on this project first.")
            return redirect(reverse("account_home", kwargs={"slug": slug}))
        return view(request, project, account, *args, **kwargs)

    return wrapper


def id_param(value: str | None) -> int:
    """A row id from a form or query string; 404 for anything that is not one."""
    text = (value or "").strip()
    if not text.isascii() or not text.isdigit() or len(text) > 18:
        raise Http404("missing or bad id")
    return int(text)


def page_account(request: HttpRequest, project: Project) -> Account | None:
    """The volunteer logged in to ``project``, for pages anyone may see."""
    return session_account(request, project)
