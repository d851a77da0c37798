"""Plan classes: what an app version needs from a host and the resources it uses.

BOINC's standard class names are known out of the box; projects define more in the
admin (stored as rows with the same fields). In CreditNew's design a plan
class only has to give the job's peak FLOPS; the scheduler corrects it with the
host's elapsed-time statistics.
"""

from __future__ import annotations

from dataclasses import dataclass

from apps.core.domain.resources import ProcType


@dataclass(frozen=True, slots=True)
class PlanClassSpec:
    name: str
    proc_type: ProcType = ProcType.CPU
    avg_ncpus: float = 1.0
    multi_thread: bool = False  # use all of the host's usable CPUs (up to max_ncpus)
    max_ncpus: float = 0.0  # 0 = no cap
    gpu_usage: float = 0.0  # coprocessor instances per job
    min_gpu_ram_mb: float = 0.0
    needs_opencl: bool = False
    min_compute_capability: int = 0  # NVIDIA: major*100+minor


@dataclass(frozen=True, slots=True)
class HostResources:
    """What the plan-class check needs to know about a host."""

    p_ncpus: int
    p_fpops: float
    gpus: dict[ProcType, GpuInfo]


@dataclass(frozen=True, slots=True)
class GpuInfo:
    count: int
    peak_flops: float
    available_ram_mb: float = 0.0
    have_opencl: bool = False
    compute_capability: int = 0


@dataclass(frozen=True, slots=True)
class ResourceUsage:
    """The resources one job of this version uses on a given host, and its peak FLOPS."""

    proc_type: ProcType
    avg_ncpus: float
    gpu_usage: float
    peak_flops: float


BUILTIN_PLAN_CLASSES: dict[str, PlanClassSpec] = {
    spec.name: spec
    for spec in (
        PlanClassSpec(name=""),
        PlanClassSpec(name="mt", multi_thread=True),
        PlanClassSpec(name="cuda", proc_type=ProcType.NVIDIA, avg_ncpus=0.1, gpu_usage=1, min_gpu_ram_mb=254),
        PlanClassSpec(
            name="cuda_fermi",
            proc_type=ProcType.NVIDIA,
            avg_ncpus=0.1,
            gpu_usage=1,
            min_gpu_ram_mb=254,
            min_compute_capability=200,
        ),
        PlanClassSpec(
            name="opencl_nvidia_101", proc_type=ProcType.NVIDIA, avg_ncpus=0.1, gpu_usage=1, needs_opencl=True
        ),
        PlanClassSpec(name="ati", proc_type=ProcType.ATI, avg_ncpus=0.1, gpu_usage=1, min_gpu_ram_mb=250),
        PlanClassSpec(
            name="opencl_ati_101", proc_type=ProcType.ATI, avg_ncpus=0.1, gpu_usage=1, needs_opencl=True
        ),
        PlanClassSpec(
            name="opencl_intel_gpu_102",
            proc_type=ProcType.INTEL_GPU,
            avg_ncpus=0.1,
            gpu_usage=1,
            needs_opencl=True,
        ),
    )
}


def resource_usage(spec: PlanClassSpec, host: HostResources) -> ResourceUsage | None:
    """The usage of one job on ``host``, or None if the host cannot run this class.

    Peak FLOPS = CPUs used × the host's CPU peak + GPU instances × the GPU's peak
    (CreditNew's peak FLOP count, docs/credit.md).
    """
    ncpus = max(host.p_ncpus, 1)
    if spec.multi_thread:
        avg_ncpus = float(ncpus if spec.max_ncpus <= 0 else min(ncpus, spec.max_ncpus))
    else:
        avg_ncpus = spec.avg_ncpus
    if spec.proc_type is ProcType.CPU:
        return ResourceUsage(ProcType.CPU, avg_ncpus, 0.0, avg_ncpus * host.p_fpops)
    gpu = host.gpus.get(spec.proc_type)
    if gpu is None or gpu.count < 1 or gpu.count < spec.gpu_usage:
        return None
    if spec.min_gpu_ram_mb and gpu.available_ram_mb and gpu.available_ram_mb < spec.min_gpu_ram_mb:
        return None
    if spec.needs_opencl and not gpu.have_opencl:
        return None
    if spec.min_compute_capability and gpu.compute_capability < spec.min_compute_capability:
        return None
    peak = spec.gpu_usage * gpu.peak_flops + avg_ncpus * host.p_fpops
    return ResourceUsage(spec.proc_type, avg_ncpus, spec.gpu_usage, peak)
