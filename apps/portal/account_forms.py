"""Forms of the account pages: they check input as the sign-up form and BOINC's pages do;
the services (apps.volunteers.services) make the change."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth.forms import PasswordResetForm, SetPasswordForm
from django.core.exceptions import ValidationError

from apps.projects.models import Project
from apps.volunteers.models import Account
from apps.volunteers.services import account_password_matches, account_password_set, user_name_problem


class AccountInfoForm(forms.Form):
    name = forms.CharField(label="Name shown to others", max_length=200)
    country = forms.CharField(label="Country", max_length=100, required=False)
    url = forms.URLField(label="Your web site", required=False, assume_scheme="https", max_length=200)

    def clean_name(self) -> str:
        name: str = self.cleaned_data["name"].strip()
        problem = user_name_problem(name)
        if problem:
            raise ValidationError(problem[:1].upper() + problem[1:] + ".")
        return name


class EmailChangeForm(forms.Form):
    email = forms.EmailField(label="New email address", max_length=254)
    password = forms.CharField(
        label="Your password",
        widget=forms.PasswordInput(attrs={"autocomplete": "current-password"}),
        strip=False,
        help_text="Needed: the BOINC client logs in with your password and address together.",
    )


class AccountSetPasswordForm(SetPasswordForm):
    """Django's set-password form for a project account: the project's minimum length (as
    sign-up asks), and the new hash written by the service, for the BOINC client too."""

    user: Account

    def __init__(self, user: Account, *args: Any, project: Project, **kwargs: Any) -> None:
        super().__init__(user, *args, **kwargs)
        self.project = project
        self.fields["new_password1"].help_text = f"At least {project.min_passwd_length} characters."

    def validate_password_for_user(self, user: Any, password_field_name: str = "new_password2") -> None:
        password = self.cleaned_data.get(password_field_name) or ""
        if password and len(password) < self.project.min_passwd_length:
            self.add_error(password_field_name, f"Use at least {self.project.min_passwd_length} characters.")

    def save(self, commit: bool = True) -> Account:
        account_password_set(account=self.user, password=self.cleaned_data["new_password1"])
        return self.user


class AccountPasswordChangeForm(AccountSetPasswordForm):
    """The same, asking the current password first (Django's PasswordChangeForm does that
    with the auth user's check_password; an account checks it as lookup_account.php does)."""

    old_password = forms.CharField(
        label="Current password",
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "current-password", "autofocus": True}),
    )
    field_order = ["old_password", "new_password1", "new_password2"]

    def clean_old_password(self) -> str:
        old: str = self.cleaned_data["old_password"]
        if not account_password_matches(account=self.user, password=old):
            raise ValidationError("Your current password was entered incorrectly.", code="password_incorrect")
        return old


class AccountPasswordResetForm(PasswordResetForm):
    """Django's reset form, finding the account of this project with the address."""

    def __init__(self, *args: Any, project: Project, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.project = project

    def get_users(self, email: str) -> list[Account]:  # type: ignore[override]  # accounts, not auth users
        return list(Account.objects.filter(project=self.project, email_addr__iexact=email.strip()))
