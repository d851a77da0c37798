"""Volunteer sign-up and log-in pages of a project: how a volunteer finds the account key.

Log-in is per project and session based: the session holds the Account id and a keyed
hash of its password hash and authenticator, so changing either logs the session out.
These are Accounts (BOINC users), not Django auth users.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.crypto import constant_time_compare, salted_hmac

from apps.core import clock
from apps.projects.models import Project
from apps.protocol import WebRpcError
from apps.scheduler.attach import (
    AccountRpcError,
    account_create,
    account_find,
    account_lookup,
    login_attempt,
    too_many_attempts,
)
from apps.scheduler.ratelimits import mail_address_allowed, signup_wait, too_many_text
from apps.volunteers.mail import volunteer_mail_send
from apps.volunteers.models import Account, passwd_hash

SESSION_SALT = "cobblestone.account-session"


def stats_export_consent_field() -> forms.BooleanField:
    """BOINC's STATSEXPORT consent, asked in its words, at sign-up and in the preferences."""
    return forms.BooleanField(
        label="Do you consent to exporting your data to BOINC statistics aggregation web sites?",
        required=False,
        help_text=(
            "The project's daily statistics files, read by sites such as BOINCstats, then list "
            "your name, country, web site, team and credit, your computers' credit and hardware, "
            "and a cross-project id that adds up your credit across BOINC projects. Change it "
            "any time under Project preferences."
        ),
    )


class SignupForm(forms.Form):
    name = forms.CharField(label="Name shown to others", max_length=200)
    email = forms.EmailField(label="Email address", max_length=254)
    password = forms.CharField(label="Password", widget=forms.PasswordInput, strip=False)
    # Ticked on the blank form; an unticked box is absent from the POST and means "no".
    stats_export_consent = stats_export_consent_field()

    def __init__(self, *args: Any, min_passwd_length: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.min_passwd_length = min_passwd_length
        self.fields["password"].help_text = f"At least {min_passwd_length} characters."

    def clean_password(self) -> str:
        password: str = self.cleaned_data["password"]
        if len(password) < self.min_passwd_length:
            raise forms.ValidationError(f"Use at least {self.min_passwd_length} characters.")
        return password


class LoginForm(forms.Form):
    email = forms.EmailField(label="Email address", max_length=254)
    password = forms.CharField(label="Password", widget=forms.PasswordInput, strip=False)


def _session_key(project: Project) -> str:
    return f"cobblestone.account.{project.pk}"


def _session_check(account: Account) -> str:
    return salted_hmac(
        SESSION_SALT, f"{account.pk}:{account.passwd_hash}:{account.authenticator}"
    ).hexdigest()


def session_account(request: HttpRequest, project: Project) -> Account | None:
    """The Account logged in to this project in this session, if it is still valid."""
    entry = request.session.get(_session_key(project))
    if not isinstance(entry, dict):
        return None
    account = Account.objects.select_related("team").filter(project=project, pk=entry.get("id")).first()  # type: ignore[misc]  # None: no account
    if account is None or not constant_time_compare(str(entry.get("check", "")), _session_check(account)):
        return None
    return account


def session_login(request: HttpRequest, project: Project, account: Account) -> None:
    request.session.cycle_key()  # no session fixation
    request.session[_session_key(project)] = {"id": account.pk, "check": _session_check(account)}
    # For db_purge's idle-account rule: an account in use is never idle.
    Account.objects.filter(pk=account.pk).update(last_login_time=clock.now())


def _page(
    request: HttpRequest, project: Project, template: str, *, status: int = 200, **context: object
) -> HttpResponse:
    return render(request, f"portal/account/{template}", {"project": project, **context}, status=status)


def signup(request: HttpRequest, slug: str) -> HttpResponse:
    project = get_object_or_404(Project, slug=slug)
    if project.web_stopped or project.account_creation_disabled:
        return _page(request, project, "signup.html", closed=True)
    form = SignupForm(
        request.POST or None,
        initial={"stats_export_consent": True},
        min_passwd_length=project.min_passwd_length,
    )
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            # Only a new account takes the box's answer: signing up again with the password
            # of an existing account logs in, and leaves its choice as set in the preferences.
            wait = signup_wait(request)
            if wait is not None:
                raise too_many_attempts(wait)
            with login_attempt(request, data["email"]):
                account, _ = account_create(
                    project=project,
                    email_addr=data["email"],
                    passwd_hash=passwd_hash(data["password"], data["email"]),
                    user_name=data["name"].strip(),
                    stats_export_consent=data["stats_export_consent"],
                )
        except AccountRpcError as exc:
            if exc.error_num == WebRpcError.NOT_UNIQUE:
                return _signup_taken(request, project, data["email"])
            form.add_error(*_signup_error(exc))
            return _page(request, project, "signup.html", form=form, status=_form_status(exc))
        else:
            session_login(request, project, account)
            return redirect(reverse("account_home", kwargs={"slug": slug}))
    return _page(request, project, "signup.html", form=form)


def _form_status(exc: AccountRpcError) -> int:
    """429 for a form refused by the rate limits (the page says how long to wait), else 200."""
    return 429 if exc.retry_after is not None else 200


def _signup_taken(request: HttpRequest, project: Project, email: str) -> HttpResponse:
    """A sign-up with the address of an account (and another password): the page says only
    that a message went to the address, and the message tells its owner how to log in, so
    the page does not tell whether the address has an account."""
    account = account_find(project=project, email_addr=email)
    if account is not None and mail_address_allowed(request, account.email_addr):
        volunteer_mail_send(
            to=account.email_addr,
            subject=f"{project.name}: sign-up with your email address",
            body=(
                f"Someone (you, we hope) tried to join {project.name} with this email address, "
                "which already has an account there.\n\n"
                f"Log in: {project.master_url}account/\n"
                f"Forgot your password? Choose a new one: {project.master_url}get_passwd.php\n\n"
                "If it was not you, ignore this message: nothing was changed.\n"
            ),
        )
    return _page(request, project, "signup.html", sent_to=email)


def _signup_error(exc: AccountRpcError) -> tuple[str | None, str]:
    if exc.error_num == WebRpcError.BAD_USER_NAME:
        reason = exc.message or "this name cannot be used"
        return "name", reason[:1].upper() + reason[1:] + "."
    if exc.error_num == WebRpcError.BAD_EMAIL_ADDR:
        return "email", "This email address cannot be used."
    return None, exc.message or "Accounts cannot be created right now."


def account_home(request: HttpRequest, slug: str) -> HttpResponse:
    """The volunteer's account key and how to attach; a log-in form when logged out."""
    project = get_object_or_404(Project, slug=slug)
    account = session_account(request, project)
    if account is not None:
        command = f"boinccmd --project_attach {project.master_url} {account.authenticator}"
        return _page(request, project, "account.html", account=account, attach_command=command)
    form = LoginForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        email, password = form.cleaned_data["email"], form.cleaned_data["password"]
        try:
            with login_attempt(request, email):
                account = account_lookup(
                    project=project, email_addr=email, passwd_hash=passwd_hash(password, email)
                )
        except AccountRpcError as exc:
            form.add_error(None, _login_error(exc))
            return _page(request, project, "login.html", form=form, status=_form_status(exc))
        else:
            assert account is not None
            session_login(request, project, account)
            return redirect(reverse("account_home", kwargs={"slug": slug}))
    return _page(request, project, "login.html", form=form)


def _login_error(exc: AccountRpcError) -> str:
    if exc.retry_after is not None:
        return too_many_text(exc.retry_after)
    if exc.error_num == WebRpcError.PROJECT_DOWN:
        return "The project is down; try later."
    return "Wrong email or password."


def account_logout(request: HttpRequest, slug: str) -> HttpResponse:
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    project = get_object_or_404(Project, slug=slug)
    request.session.pop(_session_key(project), None)
    return redirect(reverse("account_home", kwargs={"slug": slug}))
