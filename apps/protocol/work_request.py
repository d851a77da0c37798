"""The work a scheduler request asks for, per processing resource (BOINC's WORK_REQ)."""

from __future__ import annotations

from dataclasses import dataclass

from apps.core.domain.resources import ProcType


@dataclass(frozen=True, slots=True)
class ResourceRequest:
    """What the client asks of one processing resource."""

    proc_type: ProcType
    req_secs: float
    req_instances: float
    estimated_delay: float

    @property
    def needed(self) -> bool:
        return self.req_secs > 0 or self.req_instances > 0


@dataclass(frozen=True, slots=True)
class WorkRequest:
    """The request's work ask, derived as BOINC's WORK_REQ does.

    ``rsc_spec_request`` is True for a new-style request: one that carries
    ``cpu_req_secs``/``cpu_req_instances`` or a coprocessor ``req_secs``/``req_instances``.
    Otherwise only the legacy ``work_req_seconds`` counts. ``resources`` lists the CPU
    first, then each GPU type the host reported, in request order.
    """

    rsc_spec_request: bool
    work_req_seconds: float
    resources: tuple[ResourceRequest, ...]

    def get(self, proc_type: ProcType) -> ResourceRequest | None:
        for resource in self.resources:
            if resource.proc_type is proc_type:
                return resource
        return None

    def needs(self, proc_type: ProcType) -> bool:
        """BOINC's need_proc_type(): is work for this resource requested at all?"""
        resource = self.get(proc_type)
        if self.rsc_spec_request:
            return resource is not None and resource.needed
        return self.work_req_seconds > 0 and resource is not None

    @property
    def needed_types(self) -> tuple[ProcType, ...]:
        return tuple(r.proc_type for r in self.resources if self.needs(r.proc_type))

    @property
    def wants_work(self) -> bool:
        return bool(self.needed_types)
