"""Reading a scenario from YAML or JSON text into frozen values.

The format (times in days, speeds in FLOPS, job sizes in floating-point operations)::

    name: example-1
    description: free text
    duration_days: 30
    seed: 1
    host:
      resources:
        - {type: CPU, ninstances: 1, flops: 1.0e9}
        - {type: NVIDIA, ninstances: 1, flops: 2.0e9}
    client:                       # all optional
      work_buf_min_days: 0.1      # the work-fetch design's CI
      work_buf_additional_days: 0.25   # the work-fetch design's AW
      connection_period_days: 0.1 # the 4.x client's T (defaults to work_buf_min_days)
      cpu_scheduling_period: 3600 # seconds
      poll_interval: 3600         # seconds between work-fetch polls
      rec_half_life_days: 10
      sample_interval_days: 1     # resolution of the usage timeline
    projects:
      - name: A
        resource_share: 100
        attach_days: 0
        job_limit: null           # jobs the server can send in all; null = endless
        apps:
          - name: a_gpu
            fpops_est: 2.88e13
            fpops_stdev: 0
            latency_bound_days: 7
            weight: 1
            available_from_days: 0
            versions: [{resource: NVIDIA, usage: 1}]
        queued_jobs:
          - {app: a_gpu, resource: NVIDIA, fpops: 2.88e13, deadline_days: 7, count: 1}
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from apps.core.domain.resources import ProcType
from apps.emulator.domain.model import (
    DAY,
    AppSpec,
    AppVersionSpec,
    ClientPrefs,
    HostSpec,
    ProjectSpec,
    QueuedJobSpec,
    ResourceSpec,
    Scenario,
)

SCENARIO_DIR = Path(__file__).resolve().parent.parent / "scenarios"


class ScenarioError(ValueError):
    """The scenario text is not valid; the message says where."""


def bundled_scenarios() -> dict[str, Path]:
    """The sample scenarios shipped in apps/emulator/scenarios, by file stem."""
    return {p.stem: p for p in sorted(SCENARIO_DIR.glob("*.yaml"))}


def load_scenario(path_or_text: str | Path) -> Scenario:
    """Load a scenario from a file path, a bundled scenario name, or YAML/JSON text."""
    if isinstance(path_or_text, Path):
        text = path_or_text.read_text(encoding="utf-8")
    elif "\n" not in path_or_text and path_or_text in bundled_scenarios():
        text = bundled_scenarios()[path_or_text].read_text(encoding="utf-8")
    elif "\n" not in path_or_text and path_or_text.endswith((".yaml", ".yml", ".json")):
        text = Path(path_or_text).read_text(encoding="utf-8")
    else:
        text = path_or_text
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ScenarioError(f"not valid YAML/JSON: {exc}") from exc
    if not isinstance(data, Mapping):
        raise ScenarioError("a scenario must be a mapping")
    return scenario_from_dict(data)


def scenario_from_dict(data: Mapping[str, Any]) -> Scenario:
    """Build and check a scenario from parsed YAML/JSON."""
    host = _host(_mapping(data.get("host"), "host"))
    projects = tuple(_project(_mapping(p, "project"), host) for p in _list(data.get("projects"), "projects"))
    if not projects:
        raise ScenarioError("projects: at least one project is needed")
    names = [p.name for p in projects]
    if len(set(names)) != len(names):
        raise ScenarioError("projects: names must be unique")
    duration = _number(data, "duration_days", 10.0, minimum=0.0) * DAY
    return Scenario(
        name=str(data.get("name", "scenario")),
        description=str(data.get("description", "")),
        host=host,
        projects=projects,
        duration=duration,
        prefs=_prefs(_mapping(data.get("client", {}), "client")),
        seed=int(data.get("seed", 1)),
    )


def _host(data: Mapping[str, Any]) -> HostSpec:
    resources = []
    for item in _list(data.get("resources"), "host.resources"):
        item = _mapping(item, "host.resources[]")
        resources.append(
            ResourceSpec(
                proc_type=_proc(item.get("type"), "host.resources[].type"),
                ninstances=int(_number(item, "ninstances", 1, minimum=1)),
                flops=_number(item, "flops", 1e9, minimum=1.0),
            )
        )
    types = [r.proc_type for r in resources]
    if ProcType.CPU not in types:
        raise ScenarioError("host.resources: a CPU is required")
    if len(set(types)) != len(types):
        raise ScenarioError("host.resources: each type may appear once")
    return HostSpec(resources=tuple(resources))


def _project(data: Mapping[str, Any], host: HostSpec) -> ProjectSpec:
    name = str(data.get("name") or "")
    if not name:
        raise ScenarioError("project: a name is required")
    apps = tuple(
        _app(_mapping(a, f"{name}.apps[]"), name) for a in _list(data.get("apps", []), f"{name}.apps")
    )
    queued = []
    for item in _list(data.get("queued_jobs", []), f"{name}.queued_jobs"):
        item = _mapping(item, f"{name}.queued_jobs[]")
        proc = _proc(item.get("resource", "CPU"), f"{name}.queued_jobs[].resource")
        if host.resource(proc) is None:
            raise ScenarioError(f"{name}.queued_jobs: the host has no {proc.value}")
        job = QueuedJobSpec(
            app=str(item.get("app", "queued")),
            proc_type=proc,
            fpops=_number(item, "fpops", None, minimum=1.0),
            deadline=_number(item, "deadline_days", None, minimum=0.0) * DAY,
            usage=_number(item, "usage", 1.0, minimum=0.01),
        )
        queued.extend([job] * int(_number(item, "count", 1, minimum=1)))
    job_limit = data.get("job_limit")
    return ProjectSpec(
        name=name,
        resource_share=_number(data, "resource_share", 100.0, minimum=0.0),
        apps=apps,
        attach_at=_number(data, "attach_days", 0.0, minimum=0.0) * DAY,
        queued_jobs=tuple(queued),
        job_limit=None if job_limit is None else int(job_limit),
    )


def _app(data: Mapping[str, Any], project: str) -> AppSpec:
    name = str(data.get("name") or "")
    where = f"{project}.{name or 'app'}"
    versions = tuple(
        AppVersionSpec(
            proc_type=_proc(_mapping(v, where).get("resource"), f"{where}.versions[].resource"),
            usage=_number(_mapping(v, where), "usage", 1.0, minimum=0.01),
        )
        for v in _list(data.get("versions"), f"{where}.versions")
    )
    if not name or not versions:
        raise ScenarioError(f"{where}: an app needs a name and at least one version")
    return AppSpec(
        name=name,
        fpops_est=_number(data, "fpops_est", None, minimum=1.0),
        fpops_stdev=_number(data, "fpops_stdev", 0.0, minimum=0.0),
        latency_bound=_number(data, "latency_bound_days", 7.0, minimum=0.0) * DAY,
        weight=_number(data, "weight", 1.0, minimum=0.0),
        available_from=_number(data, "available_from_days", 0.0, minimum=0.0) * DAY,
        versions=versions,
    )


def _prefs(data: Mapping[str, Any]) -> ClientPrefs:
    defaults = ClientPrefs()
    period = data.get("connection_period_days")
    return ClientPrefs(
        work_buf_min=_number(data, "work_buf_min_days", defaults.work_buf_min / DAY, minimum=0.0) * DAY,
        work_buf_additional=_number(
            data, "work_buf_additional_days", defaults.work_buf_additional / DAY, minimum=0.0
        )
        * DAY,
        connection_period=None if period is None else float(period) * DAY,
        cpu_scheduling_period=_number(
            data, "cpu_scheduling_period", defaults.cpu_scheduling_period, minimum=60.0
        ),
        poll_interval=_number(data, "poll_interval", defaults.poll_interval, minimum=60.0),
        rec_half_life=_number(data, "rec_half_life_days", defaults.rec_half_life / DAY, minimum=0.01) * DAY,
        sample_interval=_number(data, "sample_interval_days", defaults.sample_interval / DAY, minimum=0.001)
        * DAY,
    )


def _number(data: Mapping[str, Any], key: str, default: float | None, *, minimum: float) -> float:
    value = data.get(key, default)
    if value is None:
        raise ScenarioError(f"{key} is required")
    try:
        number = float(value)
    except (TypeError, ValueError) as exc:
        raise ScenarioError(f"{key} must be a number, not {value!r}") from exc
    if not number >= minimum:  # also rejects NaN
        raise ScenarioError(f"{key} must be at least {minimum}, not {value!r}")
    return number


def _proc(value: Any, where: str) -> ProcType:
    try:
        return ProcType.from_wire(str(value))
    except ValueError as exc:
        raise ScenarioError(f"{where}: {exc}") from exc


def _mapping(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ScenarioError(f"{where} must be a mapping")
    return value


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise ScenarioError(f"{where} must be a list")
    return value
