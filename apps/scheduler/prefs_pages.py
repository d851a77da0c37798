"""The volunteer's project preferences page (BOINC's prefs.php?subset=project).

As BOINC's: the resource share (the client's share of the computer for this project), which
processor types may run this project's tasks (BOINC's no_cpu, no_cuda, no_ati, no_intel_gpu,
no_apple_gpu: only the types the project has applications for are asked), "Run test
applications?" (allow_beta_work), the applications to run with "allow other applications
when the selected ones have no work" (when the project has several), and the settings the
project's apps declare. A primary set, and one per location (venue) for computers there, as
the computing preferences have. The primary page also holds BOINC's two privacy choices
(show_hosts and the STATSEXPORT consent) and the default location of new computers.

Saved, the preferences go to every computer in its next scheduler reply
(``<project_preferences>``): the client shows and uses the resource share; the scheduler
sends by the processor types and the app selection of the host's location.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from django import forms
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse

from apps.applications.domain.pref_fields import MAX_VALUE, parse_pref_fields
from apps.applications.models import App
from apps.core.domain.resources import ProcType
from apps.projects.models import Project
from apps.protocol import xml_safe_text
from apps.protocol.global_prefs import VENUES
from apps.protocol.project_prefs import GPU_PREF_TAGS, RESOURCE_SHARE_MAX, ProjectPrefs
from apps.scheduler.account_pages import stats_export_consent_field
from apps.scheduler.services.catalog import project_catalog
from apps.scheduler.services.prefs import (
    account_project_prefs_get,
    account_project_prefs_save,
    account_project_prefs_set,
)
from apps.volunteers.services import VENUE_CHOICES, account_venue_set
from apps.volunteers.sessions import session_account

# The form field and question of each GPU type.
GPU_FIELDS: dict[ProcType, tuple[str, str]] = {
    ProcType.NVIDIA: ("use_nvidia", "Use NVIDIA GPU"),
    ProcType.ATI: ("use_amd", "Use AMD GPU"),
    ProcType.INTEL_GPU: ("use_intel_gpu", "Use Intel GPU"),
    ProcType.APPLE_GPU: ("use_apple_gpu", "Use Apple GPU"),
}
SPECIFIC_PREFIX = "specific_"


class ProjectPrefsForm(forms.Form):
    resource_share = forms.FloatField(
        label="Resource share",
        min_value=0,
        max_value=RESOURCE_SHARE_MAX,
        help_text=(
            "The proportion of your computer's resources allocated to this project: with two "
            "projects of shares 100 and 200, the first gets a third and the second two thirds."
        ),
    )
    use_cpu = forms.BooleanField(label="Use CPU", required=False)
    allow_beta_work = forms.BooleanField(
        label="Run test applications?",
        required=False,
        help_text="Test versions help the project check new applications; their tasks fail more often.",
    )

    def __init__(
        self,
        *args: Any,
        gpu_types: list[ProcType],
        apps: list[App],
        primary: bool,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.gpu_types = gpu_types
        # Placed after "Use CPU", in BOINC's order.
        fields = dict(self.fields)
        self.fields.clear()
        for name, field in fields.items():
            self.fields[name] = field
            if name == "use_cpu":
                for proc_type in gpu_types:
                    field_name, label = GPU_FIELDS[proc_type]
                    self.fields[field_name] = forms.BooleanField(label=label, required=False)
        if len(apps) > 1:
            self.fields["apps_selected"] = forms.TypedMultipleChoiceField(
                label="Run only the selected applications",
                choices=[(app.id, str(app)) for app in apps],
                coerce=int,
                required=False,
                widget=forms.CheckboxSelectMultiple,
                help_text="None selected: all of them.",
            )
            self.fields["allow_non_preferred_apps"] = forms.BooleanField(
                label="If no work for selected applications is available, accept work from other applications?",
                required=False,
            )
        for app in apps:
            for declared in parse_pref_fields(app.prefs_fields)[0]:
                self.fields.setdefault(
                    SPECIFIC_PREFIX + declared.name,
                    forms.CharField(label=declared.label, max_length=MAX_VALUE, required=False, strip=True),
                )
        if primary:
            self.fields["show_hosts"] = forms.BooleanField(
                label="Show your computers on this project's web site?",
                required=False,
                help_text="When off, your computers are still listed, but not linked to you.",
            )
            self.fields["stats_export_consent"] = stats_export_consent_field()
            self.fields["default_venue"] = forms.ChoiceField(
                label="Default computer location",
                choices=VENUE_CHOICES,
                required=False,
                help_text=(
                    "New computers start at this location and use its preferences, if it has its own."
                ),
            )

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        assert data is not None  # forms.Form.clean returns cleaned_data
        # With none on the scheduler could send this volunteer's computers nothing at all.
        resources = ["use_cpu", *(GPU_FIELDS[p][0] for p in self.gpu_types)]
        if not any(data.get(name) for name in resources):
            names = " and ".join(str(self.fields[name].label) for name in resources)
            raise forms.ValidationError(
                f"Choose at least one of {names}: with none, your computers get no tasks from this project."
                if len(resources) > 1
                else "Use CPU must stay on: this project's tasks all run on the CPU.",
                code="no_resources",
            )
        for name, value in list(data.items()):
            if name.startswith(SPECIFIC_PREFIX) and value and xml_safe_text(value) != value:
                self.add_error(name, "Use printable characters only.")
        return data

    def prefs(self, current: ProjectPrefs) -> ProjectPrefs:
        """The set as edited; what the form does not ask (a GPU type the project has no
        application for, another app's setting) stays as it was."""
        data = self.cleaned_data
        gpus = {GPU_PREF_TAGS[p]: not data[GPU_FIELDS[p][0]] for p in self.gpu_types}
        specific = dict(current.specific)
        for name, value in data.items():
            if name.startswith(SPECIFIC_PREFIX):
                specific[name.removeprefix(SPECIFIC_PREFIX)] = value
        return replace(
            current,
            resource_share=data["resource_share"],
            no_cpu=not data["use_cpu"],
            allow_beta_work=data["allow_beta_work"],
            apps_selected=tuple(data.get("apps_selected", current.apps_selected)),
            allow_non_preferred_apps=data.get("allow_non_preferred_apps", current.allow_non_preferred_apps),
            specific=tuple((name, value) for name, value in specific.items() if value),
            **gpus,
        )


def _initial(prefs: ProjectPrefs, gpu_types: list[ProcType]) -> dict[str, Any]:
    initial: dict[str, Any] = {
        "resource_share": f"{prefs.resource_share:g}",
        "use_cpu": not prefs.no_cpu,
        "allow_beta_work": prefs.allow_beta_work,
        "apps_selected": list(prefs.apps_selected),
        "allow_non_preferred_apps": prefs.allow_non_preferred_apps,
    }
    for proc_type in gpu_types:
        initial[GPU_FIELDS[proc_type][0]] = not prefs.refuses(proc_type)
    for name, value in prefs.specific:
        initial[SPECIFIC_PREFIX + name] = value
    return initial


def _gpu_types(project: Project) -> list[ProcType]:
    """The GPU types the project has applications for, in BOINC's order."""
    offered = set().union(*project_catalog(project).platform_resources.values())
    return [p for p in GPU_FIELDS if p in offered]


def account_prefs(request: HttpRequest, slug: str) -> HttpResponse:
    """Show and change the logged-in volunteer's project preferences (``?venue=`` a location's)."""
    project = get_object_or_404(Project, slug=slug)
    account = session_account(request, project)
    if account is None:
        return redirect(reverse("account_home", kwargs={"slug": slug}))
    venue = (request.POST.get("venue") or request.GET.get("venue") or "").strip()
    if venue and venue not in VENUES:
        raise Http404("unknown venue")
    here = reverse("account_prefs", kwargs={"slug": slug})
    doc = account_project_prefs_get(account)
    if venue and request.method == "POST" and "remove" in request.POST:
        if doc.venue(venue):
            account_project_prefs_save(account=account, doc=doc.with_venue(venue, None))
            messages.success(
                request,
                f"The separate preferences for {venue} are removed; computers there use the primary ones.",
            )
        return redirect(here)
    current = (doc.venue(venue) or doc.primary) if venue else doc.primary
    gpu_types = _gpu_types(project)
    apps = list(App.objects.filter(project=project, deprecated=False).order_by("id"))
    initial = _initial(current, gpu_types)
    if not venue:
        initial |= {
            "show_hosts": account.show_hosts,
            "stats_export_consent": account.stats_export_consent,
            "default_venue": account.venue,
        }
    # An unticked box is simply absent: a POST may carry no box at all and still be a choice.
    form = ProjectPrefsForm(
        request.POST if request.method == "POST" else None,
        initial=initial,
        gpu_types=gpu_types,
        apps=apps,
        primary=not venue,
    )
    if form.is_valid():
        edited = form.prefs(current)
        new = doc.with_venue(venue, edited) if venue else replace(doc, primary=edited)
        account_project_prefs_save(account=account, doc=new)
        if not venue:
            data = form.cleaned_data
            account_project_prefs_set(
                account=account,
                show_hosts=data["show_hosts"],
                stats_export_consent=data["stats_export_consent"],
            )
            account_venue_set(account=account, venue=data["default_venue"] or "")
        messages.success(
            request, "Your preferences are saved; your computers use them from their next request."
        )
        return redirect(f"{here}?venue={venue}" if venue else here)
    context = {
        "project": project,
        "account": account,
        "form": form,
        "venue": venue,
        "adding": bool(venue) and not doc.venue(venue),
        "venues": [(name, doc.venue(name) is not None) for name in VENUES],
    }
    return render(request, "portal/account/prefs.html", context)
