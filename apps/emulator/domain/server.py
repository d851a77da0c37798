"""The in-process project server of the emulator.

For each request it picks an app at random by weight, sends the job with the fastest
version whose resource type was asked for, and decrements that type's request as the real
scheduler does (a GPU job never decrements the CPU request). A version whose job could not
meet its deadline behind the client's estimated delay is skipped for the rest of the RPC.
It stops when nothing requested is left, the per-RPC cap is reached or it runs out of jobs.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, field

from apps.core.domain.resources import ProcType
from apps.emulator.domain.model import AppSpec, AppVersionSpec, HostSpec, ProjectSpec

MAX_WUS_TO_SEND = 10  # config.xml max_wus_to_send default; per-RPC cap is this per device


@dataclass(frozen=True, slots=True)
class WorkRequest:
    """A scheduler request's work fields.

    A new-style request (``rsc_spec_request``) carries ``req_secs`` / ``req_instances`` per
    resource type (the work-fetch design); an old one (the 4.x client) only ``work_req_seconds`` and
    reports no coprocessors, so it can only be sent CPU jobs.
    """

    req_secs: Mapping[ProcType, float] = field(default_factory=dict)
    req_instances: Mapping[ProcType, float] = field(default_factory=dict)
    estimated_delay: Mapping[ProcType, float] = field(default_factory=dict)
    work_req_seconds: float = 0.0
    rsc_spec_request: bool = True

    @property
    def requested_types(self) -> frozenset[ProcType]:
        if not self.rsc_spec_request:
            return frozenset({ProcType.CPU}) if self.work_req_seconds > 0 else frozenset()
        keys = set(self.req_secs) | set(self.req_instances)
        return frozenset(
            p for p in keys if self.req_secs.get(p, 0.0) > 0 or self.req_instances.get(p, 0.0) > 0
        )


@dataclass(frozen=True, slots=True)
class SentJob:
    """A job in a scheduler reply."""

    app: str
    proc_type: ProcType
    usage: float
    fpops: float  # true size (drawn from the app's distribution)
    fpops_est: float  # what the client is told
    deadline: float


class SimServer:
    """One simulated project's scheduler; it counts how many jobs it has left to send."""

    def __init__(self, spec: ProjectSpec, host: HostSpec, rng: random.Random) -> None:
        self.spec = spec
        self.host = host
        self.rng = rng
        self.jobs_left = spec.job_limit

    def handle_request(self, request: WorkRequest, *, now: float) -> tuple[SentJob, ...]:
        reported = {r.proc_type for r in self.host.resources}
        if not request.rsc_spec_request:
            reported = {ProcType.CPU}  # an old client does not describe its coprocessors
        req_secs = {p: request.req_secs.get(p, 0.0) for p in reported}
        req_instances = {p: request.req_instances.get(p, 0.0) for p in reported}
        seconds_to_fill = request.work_req_seconds
        delay = {p: request.estimated_delay.get(p, 0.0) for p in reported}
        ndevices = sum(self._ninstances(p) for p in reported)
        unusable: set[tuple[str, ProcType]] = set()
        sent: list[SentJob] = []
        while len(sent) < ndevices * MAX_WUS_TO_SEND and self.jobs_left != 0:
            if request.rsc_spec_request:
                needed = {p for p in reported if req_secs[p] > 0 or req_instances[p] > 0}
            else:
                needed = {ProcType.CPU} if seconds_to_fill > 0 else set()
            choices = self._choices(now, needed, unusable)
            if not choices:
                break
            app = self._pick_app(list(choices))
            version = max(choices[app], key=self._version_flops)
            proc = version.proc_type
            est = app.fpops_est / self._version_flops(version)
            if delay[proc] + est > app.latency_bound:
                unusable.add((app.name, proc))  # infeasible: would miss its deadline
                continue
            sent.append(self._make_job(app, version, now))
            if self.jobs_left is not None:
                self.jobs_left -= 1
            req_secs[proc] -= est * version.usage
            req_instances[proc] -= version.usage
            seconds_to_fill -= est
            delay[proc] += est * version.usage / self._ninstances(proc)
        return tuple(sent)

    def _choices(
        self, now: float, needed: set[ProcType], unusable: set[tuple[str, ProcType]]
    ) -> dict[AppSpec, list[AppVersionSpec]]:
        choices: dict[AppSpec, list[AppVersionSpec]] = {}
        for app in self.spec.apps:
            if app.available_from > now or app.weight <= 0:
                continue
            versions = [
                v
                for v in app.versions
                if v.proc_type in needed
                and (app.name, v.proc_type) not in unusable
                and v.usage <= self._ninstances(v.proc_type)
            ]
            if versions:
                choices[app] = versions
        return choices

    def _ninstances(self, proc: ProcType) -> int:
        rsc = self.host.resource(proc)
        return 0 if rsc is None else rsc.ninstances

    def _pick_app(self, apps: list[AppSpec]) -> AppSpec:
        if len(apps) == 1:
            return apps[0]
        return self.rng.choices(apps, weights=[a.weight for a in apps])[0]

    def _version_flops(self, version: AppVersionSpec) -> float:
        rsc = self.host.resource(version.proc_type)
        return 0.0 if rsc is None else rsc.flops * version.usage

    def _make_job(self, app: AppSpec, version: AppVersionSpec, now: float) -> SentJob:
        fpops = app.fpops_est
        if app.fpops_stdev > 0:
            # BCE draws sizes from a normal distribution; keep them positive.
            fpops = max(self.rng.gauss(app.fpops_est, app.fpops_stdev), 0.01 * app.fpops_est)
        return SentJob(
            app=app.name,
            proc_type=version.proc_type,
            usage=version.usage,
            fpops=fpops,
            fpops_est=app.fpops_est,
            deadline=now + app.latency_bound,
        )
