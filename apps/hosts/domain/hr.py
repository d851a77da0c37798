"""Homogeneous redundancy classes: which hosts may run the instances of one workunit.

Results that differ numerically between platforms cannot be compared, so an app with
homogeneous redundancy sends all instances of a workunit to hosts of one class. A class
is an OS code (a multiple of 128) plus a CPU code, with BOINC's numbers, so that classes
stored on imported workunits keep their meaning:

- fine (1): the CPU vendor and model family (Intel Xeon, AMD Athlon 64, ...);
- coarse (2): the CPU vendor only, with AMD counted as Intel (both x86).

Matching is by substring of the host's os_name, p_vendor and p_model, case-insensitive
except the coarse ARM test on the model, first match winning (so "Family 6 Model 11" is a
Pentium, as in BOINC). A host whose class is unknown gets no job of such an app.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import IntEnum


class HrType(IntEnum):
    """An app's homogeneous_redundancy setting (BOINC's numbers)."""

    OFF = 0
    FINE = 1
    COARSE = 2


# OS codes.
NO_OS, LINUX, WINDOWS, DARWIN, FREEBSD, ANDROID = 128, 256, 384, 512, 640, 768
# CPU codes.
NO_CPU, INTEL, AMD, MACINTOSH = 1, 2, 3, 4
AMD_ATHLON, AMD_DURON, AMD_SEMPRON, AMD_OPTERON, AMD_ATHLON64, AMD_ATHLON_XP = 5, 6, 7, 8, 9, 10
INTEL_XEON, INTEL_CELERON, INTEL_PENTIUM, INTEL_PENTIUM_II, INTEL_PENTIUM_III = 11, 12, 13, 14, 15
INTEL_PENTIUM_4, INTEL_PENTIUM_D, INTEL_PENTIUM_M, AMD_ATHLON_MP, AMD_TURION = 16, 17, 18, 19, 20
INTEL_CORE2, ARM = 21, 22
MAX_HR_CLASS = ANDROID + 128

OS_NAMES = {
    NO_OS: "unknown OS",
    LINUX: "Linux",
    WINDOWS: "Windows",
    DARWIN: "macOS (Darwin)",
    FREEBSD: "FreeBSD",
    ANDROID: "Android",
}
CPU_NAMES = {
    NO_CPU: "unknown CPU",
    INTEL: "Intel",
    AMD: "AMD",
    MACINTOSH: "PowerPC",
    AMD_ATHLON: "AMD Athlon",
    AMD_DURON: "AMD Duron",
    AMD_SEMPRON: "AMD Sempron",
    AMD_OPTERON: "AMD Opteron",
    AMD_ATHLON64: "AMD Athlon 64",
    AMD_ATHLON_XP: "AMD Athlon XP",
    INTEL_XEON: "Intel Xeon",
    INTEL_CELERON: "Intel Celeron",
    INTEL_PENTIUM: "Intel Pentium",
    INTEL_PENTIUM_II: "Intel Pentium II",
    INTEL_PENTIUM_III: "Intel Pentium III",
    INTEL_PENTIUM_4: "Intel Pentium 4",
    INTEL_PENTIUM_D: "Intel Pentium D",
    INTEL_PENTIUM_M: "Intel Pentium M",
    AMD_ATHLON_MP: "AMD Athlon MP",
    AMD_TURION: "AMD Turion",
    INTEL_CORE2: "Intel Core",
    ARM: "ARM",
}

_OS_RULES = (
    ("linux", LINUX),
    ("windows", WINDOWS),
    ("darwin", DARWIN),
    ("freebsd", FREEBSD),
    ("android", ANDROID),
)
_CELERON_RULES = ((" m ", INTEL_PENTIUM_M), (" d ", INTEL_PENTIUM_D), ("iii", INTEL_PENTIUM_III))
_PENTIUM_RULES = (
    ("iii", INTEL_PENTIUM_III),
    ("ii", INTEL_PENTIUM_II),
    (" 4 ", INTEL_PENTIUM_4),
    (" d ", INTEL_PENTIUM_D),
    (" m ", INTEL_PENTIUM_M),
)
# Generic x86 model strings (an Intel vendor, no brand in the model); order matters.
_X86_FAMILY_RULES = (
    ("family 6 model 6", INTEL_CELERON),
    ("family 6 model 9", INTEL_PENTIUM_M),
    ("family 6 model 10", INTEL_XEON),
    ("family 5 model 1", INTEL_PENTIUM),
    ("family 5 model 2", INTEL_PENTIUM),
    ("family 6 model 1", INTEL_PENTIUM),
    ("family 15 model 1", INTEL_PENTIUM_4),
    ("family 15 model 2", INTEL_PENTIUM_4),
    ("family 6 model 7", INTEL_PENTIUM_III),
    ("family 6 model 8", INTEL_PENTIUM_III),
    ("family 6 model 11", INTEL_PENTIUM_III),
    ("family 6 model 3", INTEL_PENTIUM_II),
    ("family 6 model 5", INTEL_PENTIUM_II),
)
_AMD_RULES = (
    ("duron", AMD_DURON),
    ("opteron", AMD_OPTERON),
    ("sempron", AMD_SEMPRON),
    ("turion", AMD_TURION),
)
_ATHLON_RULES = (("xp", AMD_ATHLON_XP), ("mp", AMD_ATHLON_MP), ("64", AMD_ATHLON64))


def _first(text: str, rules: Iterable[tuple[str, int]], default: int) -> int:
    return next((code for needle, code in rules if needle in text), default)


@dataclass(frozen=True, slots=True)
class HostDescription:
    """What a host reports that its class depends on."""

    os_name: str
    p_vendor: str
    p_model: str

    def os_code(self) -> int:
        return _first(self.os_name.lower(), _OS_RULES, NO_OS)

    def cpu_coarse(self) -> int:
        vendor = self.p_vendor.lower()
        if "intel" in vendor or "amd" in vendor:
            return INTEL
        if "macintosh" in vendor:
            return MACINTOSH
        if "arm" in vendor or "ARM" in self.p_model:  # some ARM hosts leave the vendor blank
            return ARM
        return NO_CPU

    def cpu_fine(self) -> int:
        vendor, model = self.p_vendor.lower(), self.p_model.lower()
        if "intel" in vendor:
            if "xeon" in model:
                return INTEL_XEON
            if "celeron" in model:
                return _first(model, _CELERON_RULES, INTEL_CELERON)
            if "core" in model:
                return INTEL_CORE2
            if "pentium" in model:
                return _first(model, _PENTIUM_RULES, INTEL_PENTIUM)
            if "x86" in model:
                return _first(model, _X86_FAMILY_RULES, INTEL)
            return INTEL
        if "amd" in vendor:
            brand = _first(model, _AMD_RULES, 0)
            if brand:
                return brand
            return _first(model, _ATHLON_RULES, AMD_ATHLON) if "athlon" in model else AMD
        if "macintosh" in vendor:
            return MACINTOSH
        if "arm" in vendor:
            return ARM
        return NO_CPU


def hr_class(host: HostDescription, hr_type: int) -> int | None:
    """The host's class for ``hr_type``, None when unknown (it gets no job of such an app);
    0 when the app has no homogeneous redundancy."""
    if hr_type == HrType.FINE:
        os_code, cpu = host.os_code(), host.cpu_fine()
        if os_code == NO_OS or cpu == NO_CPU:
            return None
        return os_code + cpu
    if hr_type == HrType.COARSE:
        os_code, cpu = host.os_code(), host.cpu_coarse()
        # Only these are known coarse classes (a Darwin host on ARM is not one of them).
        if os_code in (LINUX, WINDOWS) or (os_code == DARWIN and cpu in (INTEL, MACINTOSH)):
            return os_code + cpu
        return None
    return 0


def hr_class_name(hr_class_code: int) -> str:
    """A readable name for a stored class, e.g. "Linux, Intel Xeon"."""
    os_code, cpu = (hr_class_code // 128) * 128, hr_class_code % 128
    return f"{OS_NAMES.get(os_code, f'OS {os_code}')}, {CPU_NAMES.get(cpu, f'CPU {cpu}')}"


@dataclass(slots=True)
class ClassComputing:
    """How much computing one class has: its hosts, their recent credit and peak FLOPS."""

    hr_class: int
    hosts: int = 0
    recent_credit: float = 0.0
    flops: float = 0.0

    @property
    def name(self) -> str:
        return hr_class_name(self.hr_class)


@dataclass(slots=True)
class HrCensus:
    """Per type (fine, coarse), the computing of each class, and what has no class."""

    classes: dict[int, dict[int, ClassComputing]] = field(
        default_factory=lambda: {HrType.FINE: {}, HrType.COARSE: {}}
    )
    unknown: dict[int, ClassComputing] = field(
        default_factory=lambda: {HrType.FINE: ClassComputing(0), HrType.COARSE: ClassComputing(0)}
    )

    def add(self, host: HostDescription, *, recent_credit: float, flops: float) -> None:
        for hr_type in (HrType.FINE, HrType.COARSE):
            code = hr_class(host, hr_type)
            if code is None:
                row = self.unknown[hr_type]
            else:
                row = self.classes[hr_type].setdefault(code, ClassComputing(code))
            row.hosts += 1
            row.recent_credit += recent_credit
            row.flops += flops

    def total_credit(self, hr_type: int) -> float:
        """The recent credit of the type's classes (hosts of unknown class left out)."""
        return sum(c.recent_credit for c in self.classes[hr_type].values())

    def ranked(self, hr_type: int) -> list[ClassComputing]:
        """The type's classes, most recent credit first."""
        return sorted(self.classes[hr_type].values(), key=lambda c: (-c.recent_credit, c.hr_class))
