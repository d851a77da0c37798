"""Account deletion pages with BOINC's names: delete_account_request.php (password, then a
confirmation link by email), delete_account_confirm.php (the link: starts the grace period)
and delete_account_cancel.php. The steps are apps.account_deletion.services."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from apps.account_deletion.services import (
    LINK_VALID_SECONDS,
    AccountDeleteError,
    account_delete_cancel,
    account_delete_check,
    account_delete_confirm,
    account_delete_request,
    grace_period,
)
from apps.core import clock
from apps.portal.volunteer_session import volunteer_required
from apps.projects.models import Project
from apps.scheduler.ratelimits import (
    login_failed,
    login_wait,
    mail_address_allowed,
    mail_ip_wait,
    too_many_text,
    wait_text,
)
from apps.volunteers.mail import volunteer_mail_send
from apps.volunteers.models import Account


class DeleteRequestForm(forms.Form):
    password = forms.CharField(
        label="Your password",
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "current-password"}),
    )


def _page(
    request: HttpRequest, project: Project, account: Account, status: int = 200, **context: object
) -> HttpResponse:
    return render(
        request,
        "portal/account/delete_account.html",
        {"project": project, "account": account, "grace_days": grace_period().days, **context},
        status=status,
    )


def _refused(
    request: HttpRequest, project: Project, account: Account, form: forms.Form, wait: int, text: str
) -> HttpResponse:
    form.add_error(None, text)
    response = _page(request, project, account, status=429, form=form)
    response["Retry-After"] = str(wait)
    return response


def _mail_link(project: Project, account: Account, token: str) -> None:
    volunteer_mail_send(
        to=account.email_addr,
        subject=f"Confirm the deletion of your account on {project.name}",
        body=(
            f"Someone (you, we hope) asked to delete your account on {project.name}.\n\n"
            f"To confirm, open this link while logged in to the account:\n"
            f"{project.master_url}delete_account_confirm.php?token={token}\n\n"
            f"The link works for {LINK_VALID_SECONDS // 3600} hours. After you confirm, the account is "
            f"deleted in {grace_period().days} days; until then you can cancel on your account page.\n"
            "If you did not ask, ignore this message and change your password: whoever asked knew it.\n"
        ),
    )


@volunteer_required
def delete_request(request: HttpRequest, project: Project, account: Account) -> HttpResponse:
    form = DeleteRequestForm(request.POST or None)
    if request.method != "POST" or account.delete_after is not None:
        return _page(request, project, account, form=form)
    wait = login_wait(request, account.email_addr)
    if wait is not None:
        return _refused(request, project, account, form, wait, too_many_text(wait))
    wait = mail_ip_wait(request)
    if wait is not None:
        return _refused(
            request, project, account, form, wait, f"Too many requests. Try again in {wait_text(wait)}."
        )
    if not form.is_valid():
        return _page(request, project, account, form=form)
    password = form.cleaned_data["password"]
    try:
        account_delete_check(account=account, password=password)
    except AccountDeleteError as exc:
        if exc.field == "password":
            login_failed(request, account.email_addr)
        form.add_error(exc.field, str(exc))
        return _page(request, project, account, form=form)
    if not mail_address_allowed(request, account.email_addr):
        # Checked before the request is recorded: the link last sent keeps working.
        form.add_error(
            None, "Several messages were sent to your address lately. Use the latest, or try again later."
        )
        return _page(request, project, account, status=429, form=form)
    token = account_delete_request(account=account, now=clock.now())
    _mail_link(project, account, token)
    return _page(request, project, account, sent=True)


@volunteer_required
def delete_confirm(request: HttpRequest, project: Project, account: Account) -> HttpResponse:
    token = request.POST.get("token") or request.GET.get("token") or ""
    context: dict[str, Any] = {"token": token, "confirming": True}
    if request.method != "POST":
        return _page(request, project, account, **context)
    try:
        due = account_delete_confirm(account=account, token=token, now=clock.now())
    except AccountDeleteError as exc:
        return _page(request, project, account, status=400, error=str(exc), **context)
    if due <= clock.now():
        return render(request, "portal/account/account_deleted.html", {"project": project})
    return redirect(reverse("volunteers:delete_account_request", args=[project.slug]))


@require_POST
@volunteer_required
def delete_cancel(request: HttpRequest, project: Project, account: Account) -> HttpResponse:
    try:
        account_delete_cancel(account=account)
    except AccountDeleteError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, "Your account will not be deleted.")
    return redirect(reverse("account_home", kwargs={"slug": project.slug}))
