"""Processing resource types (CPU and each GPU kind) and their BOINC names and codes."""

from __future__ import annotations

from enum import StrEnum


class ProcType(StrEnum):
    """A processing resource type; the value is the name used on the wire (coproc type)."""

    CPU = "CPU"
    NVIDIA = "NVIDIA"
    ATI = "ATI"
    INTEL_GPU = "intel_gpu"
    APPLE_GPU = "apple_gpu"

    @property
    def is_gpu(self) -> bool:
        return self is not ProcType.CPU

    @property
    def anonymous_app_version_id(self) -> int:
        """result.app_version_id for anonymous-platform jobs (BOINC: -2 CPU, -3 NVIDIA, -4 ATI)."""
        return ANONYMOUS_CODES[self]

    @property
    def coproc_tag(self) -> str:
        """The element the client uses for this GPU in <coprocs> (coproc_cuda, ...)."""
        return COPROC_TAGS[self]

    @classmethod
    def from_wire(cls, name: str) -> ProcType:
        """Accept the names clients and app_info files use (CUDA, NVIDIA, ati, intel_gpu...)."""
        key = name.strip().lower()
        for alias, proc in _ALIASES.items():
            if key == alias:
                return proc
        raise ValueError(f"unknown resource type {name!r}")


ANONYMOUS_CODES = {
    ProcType.CPU: -2,
    ProcType.NVIDIA: -3,
    ProcType.ATI: -4,
    ProcType.INTEL_GPU: -5,
    ProcType.APPLE_GPU: -6,
}

COPROC_TAGS = {
    ProcType.CPU: "",
    ProcType.NVIDIA: "coproc_cuda",
    ProcType.ATI: "coproc_ati",
    ProcType.INTEL_GPU: "coproc_intel_gpu",
    ProcType.APPLE_GPU: "coproc_apple_gpu",
}

_ALIASES = {
    "cpu": ProcType.CPU,
    "nvidia": ProcType.NVIDIA,
    "cuda": ProcType.NVIDIA,
    "coproc_cuda": ProcType.NVIDIA,
    "ati": ProcType.ATI,
    "amd": ProcType.ATI,
    "cal": ProcType.ATI,
    "coproc_ati": ProcType.ATI,
    "intel_gpu": ProcType.INTEL_GPU,
    "coproc_intel_gpu": ProcType.INTEL_GPU,
    "apple_gpu": ProcType.APPLE_GPU,
    "coproc_apple_gpu": ProcType.APPLE_GPU,
}

# Work-fetch order of BOINC's per-resource design: coprocessors before the CPU.
FETCH_ORDER = (ProcType.NVIDIA, ProcType.ATI, ProcType.INTEL_GPU, ProcType.APPLE_GPU, ProcType.CPU)

# BOINC's credit unit (the cobblestone): 200 credits per day of 1 GFLOPS.
COBBLESTONE_SCALE = 200.0 / 86400e9
