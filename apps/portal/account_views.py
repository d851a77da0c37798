"""Account editing pages with BOINC's names: edit_user_info.php (name, country, web site),
edit_email.php, edit_passwd.php, and weak_auth.php (the account's keys). The log-in and sign-up pages are
apps.scheduler.account_pages (the session is apps.volunteers.sessions); password reset is apps.portal.password_views."""

from __future__ import annotations

import re

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse

from apps.portal.account_forms import AccountInfoForm, AccountPasswordChangeForm, EmailChangeForm
from apps.portal.volunteer_session import volunteer_required
from apps.projects.models import Project
from apps.scheduler.ratelimits import login_failed, login_wait, too_many_text
from apps.volunteers.mail import volunteer_mail_send
from apps.volunteers.models import Account
from apps.volunteers.services import AccountEditError, account_email_change, account_info_update
from apps.volunteers.services.weak_keys import account_weak_key
from apps.volunteers.sessions import session_login


def _home(request: HttpRequest, project: Project, text: str) -> HttpResponse:
    messages.success(request, text)
    return redirect(reverse("account_home", kwargs={"slug": project.slug}))


def _page(request: HttpRequest, project: Project, template: str, **context: object) -> HttpResponse:
    return render(request, f"portal/account/{template}", {"project": project, **context})


@volunteer_required
def edit_user_info(request: HttpRequest, project: Project, account: Account) -> HttpResponse:
    initial = {"name": account.name, "country": account.country, "url": account.url}
    form = AccountInfoForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        account_info_update(account=account, **form.cleaned_data)
        return _home(request, project, "Your account information is saved.")
    return _page(request, project, "edit_info.html", form=form, account=account)


def _password_check_refused(
    request: HttpRequest, project: Project, account: Account, template: str, form: forms.Form
) -> HttpResponse | None:
    """The page refusing to check the current password while the log-in limits refuse the
    account's log-ins from this client, or None. A wrong current password counts as a failed
    log-in: otherwise a stolen session could guess the password without limit."""
    if request.method != "POST":
        return None
    wait = login_wait(request, account.email_addr)
    if wait is None:
        return None
    form.add_error(None, too_many_text(wait))
    response = _page(request, project, template, form=form, account=account)
    response.status_code = 429
    response["Retry-After"] = str(wait)
    return response


@volunteer_required
def edit_email(request: HttpRequest, project: Project, account: Account) -> HttpResponse:
    form = EmailChangeForm(request.POST or None)
    refused = _password_check_refused(request, project, account, "edit_email.html", form)
    if refused is not None:
        return refused
    if request.method == "POST" and form.is_valid():
        try:
            old = account_email_change(
                account=account, password=form.cleaned_data["password"], new_email=form.cleaned_data["email"]
            )
        except AccountEditError as exc:
            if exc.field == "password":
                login_failed(request, account.email_addr)
            form.add_error(exc.field, str(exc))
        else:
            session_login(request, project, account)  # the session was tied to the old hash
            volunteer_mail_send(
                to=old,
                subject=f"{project.name}: your email address was changed",
                body=(
                    f"The email address of your account on {project.name} was changed to "
                    f"{account.email_addr}.\nIf you did not do this, tell the project's "
                    "administrators: whoever changed it knew your password.\n"
                ),
            )
            return _home(
                request,
                project,
                "Your email address is changed. In the BOINC Manager, log in with the new address from now on.",
            )
    return _page(request, project, "edit_email.html", form=form, account=account)


@volunteer_required
def edit_passwd(request: HttpRequest, project: Project, account: Account) -> HttpResponse:
    form = AccountPasswordChangeForm(account, request.POST or None, project=project)
    refused = _password_check_refused(request, project, account, "edit_passwd.html", form)
    if refused is not None:
        return refused
    if request.method == "POST" and form.is_valid():
        form.save()
        session_login(request, project, account)  # as Django's update_session_auth_hash
        return _home(request, project, "Your password is changed.")
    if form.has_error("old_password", "password_incorrect"):
        login_failed(request, account.email_addr)
    return _page(request, project, "edit_passwd.html", form=form, account=account)


@volunteer_required
def weak_auth(request: HttpRequest, project: Project, account: Account) -> HttpResponse:
    """weak_auth.php: the account key and the weak key, with the account file that attaches
    a computer by the weak key."""
    name = re.sub(r"[^A-Za-z0-9._-]", "_", re.sub(r"^[a-z]+://", "", project.master_url)).rstrip("_")
    return _page(
        request,
        project,
        "weak_auth.html",
        account=account,
        weak_key=account_weak_key(account),
        account_file=f"account_{name}.xml",
    )
