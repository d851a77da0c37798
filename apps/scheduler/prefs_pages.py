"""The volunteer's project preferences page (BOINC's prefs.php?subset=project).

Only what this server acts on: which processors may run this project's tasks (BOINC's
no_cpu and no_gpus resource preferences), "Run test applications?" (BOINC's
allow_beta_work), which lets the scheduler send beta app versions and the jobs of beta
apps to this volunteer, and BOINC's two privacy preferences: whether the project's pages
link the volunteer's computers to them (show_hosts) and whether the statistics export
lists them (the STATSEXPORT consent). Also the default location (venue) of the volunteer's
new computers, which BOINC asks on this page too; computing preferences are
prefs.php?subset=global (apps.portal.prefs_views).
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse

from apps.projects.models import Project
from apps.scheduler.account_pages import session_account, stats_export_consent_field
from apps.scheduler.services.prefs import account_project_prefs_set
from apps.volunteers.services import VENUE_CHOICES, account_venue_set


class ProjectPrefsForm(forms.Form):
    # Asked as "use", stored as BOINC's "no_" flags.
    use_cpu = forms.BooleanField(label="Use CPU", required=False)
    use_gpus = forms.BooleanField(label="Use GPUs", required=False)
    allow_beta_work = forms.BooleanField(
        label="Run test applications?",
        required=False,
        help_text="Test versions help the project check new applications; their tasks fail more often.",
    )
    show_hosts = forms.BooleanField(
        label="Show your computers on this project's web site?",
        required=False,
        help_text="When off, your computers are still listed, but not linked to you.",
    )
    stats_export_consent = stats_export_consent_field()
    default_venue = forms.ChoiceField(
        label="Default computer location",
        choices=VENUE_CHOICES,
        required=False,
        help_text="New computers start at this location and use its computing preferences, if it has its own.",
    )

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        # With both off the scheduler could send this volunteer's computers nothing at all.
        if not data.get("use_cpu") and not data.get("use_gpus"):
            raise forms.ValidationError(
                "Choose at least one of Use CPU and Use GPUs: with neither, your computers get no "
                "tasks from this project.",
                code="no_resources",
            )
        return data


def account_prefs(request: HttpRequest, slug: str) -> HttpResponse:
    """Show and change the logged-in volunteer's project preferences."""
    project = get_object_or_404(Project, slug=slug)
    account = session_account(request, project)
    if account is None:
        return redirect(reverse("account_home", kwargs={"slug": slug}))
    initial = {
        "use_cpu": not account.no_cpu,
        "use_gpus": not account.no_gpus,
        "allow_beta_work": account.allow_beta_work,
        "show_hosts": account.show_hosts,
        "stats_export_consent": account.stats_export_consent,
        "default_venue": account.venue,
    }
    # An unticked box is simply absent: a POST may carry no field at all and still be a choice.
    form = ProjectPrefsForm(request.POST if request.method == "POST" else None, initial=initial)
    if form.is_valid():
        data = form.cleaned_data
        account_project_prefs_set(
            account=account,
            no_cpu=not data["use_cpu"],
            no_gpus=not data["use_gpus"],
            allow_beta_work=data["allow_beta_work"],
            show_hosts=data["show_hosts"],
            stats_export_consent=data["stats_export_consent"],
        )
        account_venue_set(account=account, venue=data["default_venue"] or "")
        messages.success(
            request, "Your preferences are saved; your computers use them from their next request."
        )
        return redirect(reverse("account_prefs", kwargs={"slug": slug}))
    return render(
        request, "portal/account/prefs.html", {"project": project, "account": account, "form": form}
    )
