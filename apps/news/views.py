"""The news pages and BOINC's two feeds: rss_main.php (public) and notices.php (personal).

The feeds answer BOINC's ``<error>`` document, never an HTML page, as the client's other web
RPCs do: -1 for a missing or malformed parameter, -155 for a wrong feed key or user.
"""

from __future__ import annotations

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.shortcuts import get_object_or_404, render
from django.utils import timezone
from django.views.decorators.cache import never_cache

from apps.news.services import feed_account, main_feed, personal_feed, public_news
from apps.projects.models import Project
from apps.protocol import WebRpcError
from apps.protocol.web_rpc import render_error

RSS = "application/rss+xml; charset=utf-8"
XML = "text/xml; charset=utf-8"
ERR_GENERIC = -1
ERR_AUTHENTICATOR = -155  # BOINC's notices.php: "Invalid authenticator"
PAGE_SIZE = 20


def _xml_error(error_num: int, message: str, status: int = 200) -> HttpResponse:
    return HttpResponse(render_error(error_num, message), content_type=XML, status=status)


def _feed_project(request: HttpRequest, slug: str) -> Project | HttpResponse:
    if request.method not in ("GET", "HEAD"):
        return HttpResponseNotAllowed(["GET"])
    project = Project.objects.filter(slug=slug).first()
    if project is None:
        return _xml_error(WebRpcError.NOT_FOUND, "No such project", status=404)
    if project.web_stopped:
        return _xml_error(WebRpcError.PROJECT_DOWN, "Project is down")
    return project


def rss_main(request: HttpRequest, slug: str) -> HttpResponse:
    project = _feed_project(request, slug)
    if isinstance(project, HttpResponse):
        return project
    return HttpResponse(main_feed(project=project, now=timezone.now()), content_type=RSS)


@never_cache  # the address holds the account's feed key
def notices(request: HttpRequest, slug: str) -> HttpResponse:
    project = _feed_project(request, slug)
    if isinstance(project, HttpResponse):
        return project
    userid, key = request.GET.get("userid", "").strip(), request.GET.get("auth", "").strip()
    if not userid.isascii() or not userid.isdigit() or len(userid) > 18 or not key:
        return _xml_error(ERR_GENERIC, "userid and auth are required")
    account = feed_account(project=project, userid=int(userid), key=key)
    if account is None:
        return _xml_error(ERR_AUTHENTICATOR, "Invalid authenticator")
    return HttpResponse(personal_feed(account=account, now=timezone.now()), content_type=RSS)


def news_page(request: HttpRequest, slug: str) -> HttpResponse:
    """All the project's public news, newest first."""
    project = get_object_or_404(Project, slug=slug)
    page = Paginator(public_news(project=project, now=timezone.now()), PAGE_SIZE).get_page(
        request.GET.get("page")
    )
    return render(request, "news/news.html", {"project": project, "page": page})
