"""The client policies the emulator can run, selected by name."""

from __future__ import annotations

from apps.emulator.domain.model import ClientPrefs, PolicyName
from apps.emulator.domain.policies.base import ClientPolicy, FetchChoice
from apps.emulator.domain.policies.rec import RecPolicy
from apps.emulator.domain.policies.v4 import V4Policy
from apps.emulator.domain.policies.v6_gpu import V6GpuPolicy

__all__ = ["ClientPolicy", "FetchChoice", "RecPolicy", "V4Policy", "V6GpuPolicy", "make_policy"]


def make_policy(name: PolicyName | str, prefs: ClientPrefs) -> ClientPolicy:
    """A fresh policy object (policies hold per-run state) for ``name``."""
    policy = PolicyName(name)
    if policy is PolicyName.V4:
        return V4Policy()
    if policy is PolicyName.V6_GPU:
        return V6GpuPolicy()
    return RecPolicy()
