"""The admin page that runs a stored scenario and shows its chart and figures (thin)."""

from __future__ import annotations

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.safestring import mark_safe

from apps.emulator.domain import ScenarioError
from apps.emulator.forms import RunForm
from apps.emulator.models import EmulationRun, Scenario
from apps.emulator.services import scenario_run

FIGURES = ("idle_fraction", "wasted_fraction", "share_violation", "monotony", "rpcs_per_job")


def scenario_run_view(request: HttpRequest, pk: int) -> HttpResponse:
    """GET: the form and the runs asked for (view_scenario). POST: run it, an act on the
    scenario as the "run under all policies" action is (change_scenario)."""
    if not request.user.has_perm("emulator.view_scenario"):
        raise PermissionDenied
    if request.method == "POST" and not request.user.has_perm("emulator.change_scenario"):
        raise PermissionDenied
    scenario = get_object_or_404(Scenario.objects.select_related("project"), pk=pk)
    form = RunForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            runs = scenario_run(
                scenario=scenario,
                policies=form.policies(),
                days=form.cleaned_data["days"],
                use_project=form.cleaned_data["use_project"],
            )
        except ScenarioError as exc:
            messages.error(request, f"The scenario could not run: {exc}")
        else:
            ids = ",".join(str(r.pk) for r in runs)
            return HttpResponseRedirect(reverse("admin:emulator_scenario_run", args=[pk]) + f"?runs={ids}")
    shown = _runs(scenario, request.GET.get("runs", ""))
    context = {
        **admin.site.each_context(request),
        "title": f"Run scenario: {scenario.name}",
        "scenario": scenario,
        "form": form,
        "can_run": request.user.has_perm("emulator.change_scenario"),
        "runs": shown,
        "charts": [(run, mark_safe(run.chart_svg)) for run in shown],  # our own SVG: texts escaped
        "comparison": comparison_rows(shown),
        "opts": Scenario._meta,
    }
    return TemplateResponse(request, "admin/emulator/scenario/run.html", context)


def _runs(scenario: Scenario, ids: str) -> list[EmulationRun]:
    wanted = [int(i) for i in ids.split(",") if i.isdigit()]
    if not wanted:
        return []
    runs = {r.pk: r for r in EmulationRun.objects.filter(scenario=scenario, pk__in=wanted)}
    return [runs[i] for i in wanted if i in runs]


def comparison_rows(runs: list[EmulationRun]) -> dict[str, list]:
    """Header and rows of the side-by-side table: shares per project and resource, then figures."""
    if not runs:
        return {"header": [], "rows": []}
    shares = runs[0].figures.get("shares", {})
    pairs = [(p, r) for p, by_rsc in shares.items() for r in by_rsc]
    header = ["policy", *(f"{p} {r}" for p, r in pairs), *(f.replace("_", " ") for f in FIGURES)]
    rows = []
    for run in runs:
        data = run.figures
        cells = [f"{data.get('shares', {}).get(p, {}).get(r, 0.0):.1%}" for p, r in pairs]
        cells += [f"{data.get('figures', {}).get(f, 0.0):.3f}" for f in FIGURES]
        rows.append([run.policy, *cells])
    return {"header": header, "rows": rows}
