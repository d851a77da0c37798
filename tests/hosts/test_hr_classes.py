"""Homogeneous redundancy classes from a host's OS, CPU vendor and model (BOINC's numbers)."""

from __future__ import annotations

import pytest

from apps.hosts.domain.hr import (
    AMD_ATHLON64,
    AMD_OPTERON,
    DARWIN,
    INTEL,
    INTEL_CORE2,
    INTEL_PENTIUM,
    INTEL_XEON,
    LINUX,
    WINDOWS,
    HostDescription,
    HrCensus,
    HrType,
    hr_class,
    hr_class_name,
)

LINUX_XEON = HostDescription("Linux Ubuntu", "GenuineIntel", "Intel(R) Xeon(R) CPU E5-2670")
WINDOWS_RYZEN = HostDescription("Microsoft Windows 11", "AuthenticAMD", "AMD Ryzen 9 5900X")
MAC_INTEL = HostDescription("Darwin", "GenuineIntel", "Intel(R) Core(TM) i7-9750H")
MAC_ARM = HostDescription("Darwin", "Apple", "Apple M1 ARM")


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        (LINUX_XEON, LINUX + INTEL_XEON),
        (WINDOWS_RYZEN, WINDOWS + 3),  # AMD without a known brand
        (MAC_INTEL, DARWIN + INTEL_CORE2),
        (HostDescription("Linux", "AuthenticAMD", "AMD Opteron(tm) Processor 6174"), LINUX + AMD_OPTERON),
        (HostDescription("Windows", "AuthenticAMD", "AMD Athlon(tm) 64 X2"), WINDOWS + AMD_ATHLON64),
        # First match wins: model 11 is caught by "Family 6 Model 1".
        (HostDescription("Linux", "GenuineIntel", "x86 Family 6 Model 11 Stepping 1"), LINUX + INTEL_PENTIUM),
    ],
)
def test_fine_class_is_os_plus_cpu_family(host: HostDescription, expected: int) -> None:
    assert hr_class(host, HrType.FINE) == expected


def test_coarse_class_counts_amd_as_intel() -> None:
    assert hr_class(WINDOWS_RYZEN, HrType.COARSE) == WINDOWS + INTEL
    assert (
        hr_class(HostDescription("Windows 10", "GenuineIntel", "Pentium"), HrType.COARSE) == WINDOWS + INTEL
    )


def test_linux_and_windows_differ_in_every_type() -> None:
    linux_amd = HostDescription("Linux", "AuthenticAMD", "AMD Ryzen")
    for hr_type in (HrType.FINE, HrType.COARSE):
        assert hr_class(linux_amd, hr_type) != hr_class(WINDOWS_RYZEN, hr_type)


@pytest.mark.parametrize(
    "host",
    [
        HostDescription("", "GenuineIntel", "Xeon"),  # no OS
        HostDescription("Linux", "", ""),  # no CPU vendor
        HostDescription("Haiku", "GenuineIntel", "Core i5"),  # OS outside the table
    ],
)
def test_unknown_fine_class(host: HostDescription) -> None:
    assert hr_class(host, HrType.FINE) is None


def test_coarse_knows_only_linux_windows_and_intel_or_powerpc_macs() -> None:
    assert hr_class(MAC_INTEL, HrType.COARSE) == DARWIN + INTEL
    assert hr_class(MAC_ARM, HrType.COARSE) is None
    assert hr_class(HostDescription("FreeBSD", "GenuineIntel", "Xeon"), HrType.COARSE) is None


def test_no_class_when_off() -> None:
    assert hr_class(LINUX_XEON, HrType.OFF) == 0


def test_class_name() -> None:
    assert hr_class_name(LINUX + INTEL_XEON) == "Linux, Intel Xeon"


def test_census_sums_credit_and_flops_per_class() -> None:
    census = HrCensus()
    census.add(LINUX_XEON, recent_credit=10, flops=1e9)
    census.add(LINUX_XEON, recent_credit=5, flops=2e9)
    census.add(WINDOWS_RYZEN, recent_credit=30, flops=4e9)
    census.add(MAC_ARM, recent_credit=1, flops=1e9)
    coarse = census.ranked(HrType.COARSE)
    assert [(c.name, c.hosts, c.recent_credit, c.flops) for c in coarse] == [
        ("Windows, Intel", 1, 30, 4e9),
        ("Linux, Intel", 2, 15, 3e9),
    ]
    assert census.unknown[HrType.COARSE].hosts == 1
    assert census.unknown[HrType.FINE].hosts == 1  # vendor "Apple" is no known CPU
