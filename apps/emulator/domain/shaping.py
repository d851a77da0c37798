"""Fitting a stored scenario to a real project's current apps (the admin page's "run").

One project of the scenario stands for the real project: the one named like the
project's slug, else the first. Its apps are replaced by the project's apps as they are
now: each app keeps its name, its jobs' typical size (mean ``rsc_fpops_est`` of its
workunits) and its delay bound; each non-deprecated version contributes its resource type
and per-job usage from its plan class (a multi-thread version uses every CPU of the
scenario's host). The other projects, the host and the client preferences stay as stored,
so admins see how the project's current apps share a volunteer's host with the others.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from apps.core.domain.resources import ProcType
from apps.emulator.domain.model import AppSpec, AppVersionSpec, Scenario
from apps.emulator.domain.scenario import ScenarioError


@dataclass(frozen=True, slots=True)
class VersionShape:
    """What one app version asks of a host: a resource type and instances per job."""

    proc_type: ProcType
    usage: float
    multi_thread: bool = False


@dataclass(frozen=True, slots=True)
class AppShape:
    """A real app as the emulator needs it."""

    name: str
    fpops_est: float
    latency_bound: float
    versions: tuple[VersionShape, ...]


def stand_in_project(scenario: Scenario, slug: str) -> str:
    """The scenario project that stands for the real project ``slug``."""
    for project in scenario.projects:
        if project.name == slug:
            return project.name
    return scenario.projects[0].name


def shape_project(scenario: Scenario, *, project: str, apps: Sequence[AppShape]) -> Scenario:
    """``scenario`` with the apps of ``project`` replaced by ``apps``.

    Versions for resource types the host lacks are dropped, one version is kept per type
    (the largest usage), and an app left with no version is left out. Raises
    ScenarioError if nothing runnable remains.
    """
    ncpus = scenario.host.cpu.ninstances
    specs = []
    for app in apps:
        by_type: dict[ProcType, AppVersionSpec] = {}
        for version in app.versions:
            rsc = scenario.host.resource(version.proc_type)
            if rsc is None:
                continue
            usage = float(ncpus) if version.multi_thread else min(max(version.usage, 0.01), rsc.ninstances)
            kept = by_type.get(version.proc_type)
            if kept is None or usage > kept.usage:
                by_type[version.proc_type] = AppVersionSpec(proc_type=version.proc_type, usage=usage)
        if by_type:
            specs.append(
                AppSpec(
                    name=app.name,
                    fpops_est=max(app.fpops_est, 1.0),
                    latency_bound=max(app.latency_bound, 60.0),
                    versions=tuple(by_type[p] for p in sorted(by_type, key=lambda p: p.value)),
                )
            )
    if not specs:
        raise ScenarioError(f"project {project}: no app has a version this scenario's host can run")
    projects = tuple(replace(p, apps=tuple(specs)) if p.name == project else p for p in scenario.projects)
    return replace(scenario, projects=projects)
