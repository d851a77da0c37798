"""Password reset by email for a project's volunteers, through Django's own views
(PasswordResetView and its three companions) with the project's account in place of
Django's auth user.

The link is built from the project's master URL (its base URL or COBBLESTONE_BASE_URL),
never from the request's Host header, which a visitor chooses. Requests are limited per
client address and messages per email address (apps.scheduler.ratelimits); past the
address's limit the page still says the message was sent.

The link's token is Django's, made over the account's id, address, stored password hash
and account key: it stops working once the password (or the address) changes, and after
PASSWORD_RESET_TIMEOUT. The message goes through the email backend of the settings (the
console unless EMAIL_HOST is set). The new password is stored as md5(password + email)
hashed, so the BOINC client logs in with it too.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import views as auth_views
from django.contrib.auth.tokens import PasswordResetTokenGenerator
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.utils.http import urlsafe_base64_decode

from apps.portal.account_forms import AccountPasswordResetForm, AccountSetPasswordForm
from apps.projects.models import Project
from apps.scheduler.ratelimits import mail_address_allowed, mail_ip_wait, wait_text
from apps.volunteers.models import Account


class AccountTokenGenerator(PasswordResetTokenGenerator):
    key_salt = "cobblestone.portal.AccountTokenGenerator"

    def _make_hash_value(self, user: Any, timestamp: int) -> str:
        account: Account = user
        return f"{account.pk}{account.passwd_hash}{timestamp}{account.email_addr}{account.authenticator}"


account_token_generator = AccountTokenGenerator()


class _ProjectMixin:
    """The project of the URL, for the forms, the templates and the links."""

    request: HttpRequest
    kwargs: dict[str, Any]
    project: Project

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        self.project = get_object_or_404(Project, slug=kwargs["slug"])
        return super().dispatch(request, *args, **kwargs)  # type: ignore[misc]  # the view class supplies it

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        return {**super().get_context_data(**kwargs), "project": self.project}  # type: ignore[misc]  # the view class supplies it

    def _url(self, name: str) -> str:
        return reverse(f"volunteers:{name}", args=[self.project.slug])


class PasswordResetView(_ProjectMixin, auth_views.PasswordResetView):
    form_class = AccountPasswordResetForm
    template_name = "portal/account/password_reset_form.html"
    email_template_name = "portal/account/password_reset_email.txt"
    subject_template_name = "portal/account/password_reset_subject.txt"
    token_generator = account_token_generator

    def get_form_kwargs(self) -> dict[str, Any]:
        return {**super().get_form_kwargs(), "project": self.project}

    def get_success_url(self) -> str:
        return self._url("password_reset_done")

    def form_valid(self, form: AccountPasswordResetForm) -> HttpResponse:
        wait = mail_ip_wait(self.request)
        if wait is not None:
            form.add_error(None, f"Too many requests for a reset link. Try again in {wait_text(wait)}.")
            response = self.form_invalid(form)
            response.status_code = 429
            response["Retry-After"] = str(wait)
            return response
        if not mail_address_allowed(self.request, form.cleaned_data["email"]):
            # Answered as if sent: the page must not tell whether the address has an account.
            return HttpResponseRedirect(self.get_success_url())
        self.extra_email_context = {"project": self.project}
        return super().form_valid(form)


class PasswordResetDoneView(_ProjectMixin, auth_views.PasswordResetDoneView):
    template_name = "portal/account/password_reset_done.html"


class PasswordResetConfirmView(_ProjectMixin, auth_views.PasswordResetConfirmView):
    form_class = AccountSetPasswordForm
    template_name = "portal/account/password_reset_confirm.html"
    token_generator = account_token_generator

    def get_user(self, uidb64: str) -> Account | None:  # type: ignore[override]  # accounts, not auth users
        try:
            pk = int(urlsafe_base64_decode(uidb64).decode())
        except (TypeError, ValueError, OverflowError, UnicodeDecodeError):
            return None
        if not 0 < pk < 2**63:
            return None  # no row has it, and the database cannot compare it
        return Account.objects.filter(project=self.project, pk=pk).first()

    def get_form_kwargs(self) -> dict[str, Any]:
        return {**super().get_form_kwargs(), "project": self.project}

    def get_success_url(self) -> str:
        return self._url("password_reset_complete")


class PasswordResetCompleteView(_ProjectMixin, auth_views.PasswordResetCompleteView):
    template_name = "portal/account/password_reset_complete.html"
