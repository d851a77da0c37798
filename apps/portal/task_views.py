"""The task pages with BOINC's names: results.php (an account's or a computer's tasks, by
state, with pending and granted credit), result.php (one task) and workunit.php (one job
and its tasks).

As BOINC's: a computer's tasks are public, an account's only to its owner, logged in.
"""

from __future__ import annotations

from typing import Any

from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from apps.hosts.models import Host
from apps.portal import task_selectors as sel
from apps.portal.task_states import FILTER_LABELS, TaskFilter, task_filter_parse
from apps.portal.volunteer_session import id_param, page_account
from apps.projects.models import Project
from apps.work.domain.result_status import task_credit_pending, task_state_of, task_status_text
from apps.work.models import Result

TASKS_PER_PAGE = 20


def _int(request: HttpRequest, name: str) -> int | None:
    raw = request.GET.get(name, "").strip()
    return id_param(raw) if raw else None


def _rows(results: list[Result]) -> list[tuple[Result, str, bool]]:
    """Each task with its Status text and whether its credit is pending."""
    out = []
    for r in results:
        state = task_state_of(r)
        out.append((r, task_status_text(state), task_credit_pending(state)))
    return out


def results(request: HttpRequest, slug: str) -> HttpResponse:
    project = get_object_or_404(Project, slug=slug)
    hostid, userid = _int(request, "hostid"), _int(request, "userid")
    me = page_account(request, project)
    if hostid is not None:
        host = get_object_or_404(Host.objects.select_related("account"), project=project, pk=hostid)
        owner: dict[str, Any] = {"host": host}
        title = f"Tasks of computer {host.pk}"
    elif userid is not None:
        if me is None or me.pk != userid:
            context = {"project": project, "account": me}
            return render(request, "portal/tasks/private.html", context, status=403)
        owner = {"account": me}
        title = f"Tasks of {me.name}"
    else:
        raise Http404("missing userid or hostid")
    state = task_filter_parse(request.GET.get("state"))
    app_id = _int(request, "appid")
    # BOINC's show_names=1: tasks and workunits by name rather than id.
    show_names = request.GET.get("show_names") not in (None, "", "0")
    page = Paginator(
        sel.task_list(project=project, state=state, app_id=app_id, names=show_names, **owner), TASKS_PER_PAGE
    ).get_page(request.GET.get("page"))
    summary = sel.task_summary(project=project, **owner)
    query = f"hostid={hostid}" if hostid is not None else f"userid={userid}"
    if show_names:
        query += "&show_names=1"
    return render(
        request,
        "portal/tasks/results.html",
        {
            "project": project,
            "title": title,
            "page": page,
            "rows": _rows(list(page)),
            "summary": summary,
            "filters": [(f, FILTER_LABELS[f], summary.counts[f]) for f in TaskFilter],
            "state": state,
            "query": query,
            "show_host": "account" in owner,
            "show_names": show_names,
        },
    )


def result(request: HttpRequest, slug: str) -> HttpResponse:
    project = get_object_or_404(Project, slug=slug)
    task = sel.task_get(
        project=project, result_id=_int(request, "resultid"), name=request.GET.get("result_name")
    )
    if task is None:
        raise Http404("no such task")
    state = task_state_of(task)
    return render(
        request,
        "portal/tasks/result.html",
        {
            "project": project,
            "task": task,
            "status": task_status_text(state),
            "credit_pending": task_credit_pending(state),
        },
    )


def workunit(request: HttpRequest, slug: str) -> HttpResponse:
    project = get_object_or_404(Project, slug=slug)
    wu_id = _int(request, "wuid")
    wu = sel.workunit_get(project=project, wu_id=wu_id) if wu_id is not None else None
    if wu is None:
        raise Http404("no such workunit")
    return render(
        request,
        "portal/tasks/workunit.html",
        {
            "project": project,
            "wu": wu,
            "rows": _rows(list(sel.workunit_tasks(wu))),
            "inputs": sel.workunit_inputs(wu),
            "errors": [flag.name.replace("_", " ").capitalize() for flag in wu.errors if flag],  # type: ignore[union-attr]  # single flags are named
        },
    )
