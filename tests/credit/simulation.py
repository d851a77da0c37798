"""A pure simulation of CreditNew: hosts, app versions, identical jobs, the feeder.

Each round (one simulated hour) every host runs one job of the same size: dispatch
(peak FLOPS captured, probation clock) -> elapsed time from the host's true speed ->
validation (probation/error rate) -> claimed_pfc -> granted_credit. App-version samples
are buffered and written at the end of the round, as the validator does at the end of a
pass; then the feeder normalization runs. Used by test_simulation.py.
"""

from __future__ import annotations

import random
import statistics
from dataclasses import dataclass, field, replace

from apps.core.domain.resources import COBBLESTONE_SCALE, ProcType
from apps.credit.domain import (
    AppVersionStats,
    CreditPolicy,
    HostAppVersionStats,
    JobOutcome,
    PfcClaim,
    ResourceUsage,
    ValidatedJob,
    VersionPfc,
    claimed_pfc,
    default_pfc,
    estimate_flops,
    granted_credit,
    host_app_version_on_outcome,
    normalize_app_versions,
    peak_flops,
    probation_on_send,
)

T0 = 1_700_000_000.0
ROUND = 3600.0
FPOPS_EST = 1e13
WORK = 3e13  # true FLOPs per job: fpops_est only has to be proportional to it
FPOPS_BOUND = 1e18

CPU_SSE, CPU_AVX, GPU_CUDA = 1, 2, 3
USAGE = {
    CPU_SSE: ResourceUsage(avg_ncpus=1.0),
    CPU_AVX: ResourceUsage(avg_ncpus=1.0),
    GPU_CUDA: ResourceUsage(avg_ncpus=0.2, gpu_type=ProcType.NVIDIA, gpu_usage=1.0),
}
# The AVX build gets more out of the same CPU; GPUs use a small part of their peak.
VERSION_EFFICIENCY = {CPU_SSE: 1.0, CPU_AVX: 1.6, GPU_CUDA: 1.0}


@dataclass
class SimHost:
    id: int
    version: int
    p_fpops: float
    gpu_peak: float
    efficiency: float
    inflate: float = 1.0  # a cheater multiplies its reported elapsed time (from cheat_from on)
    hav: HostAppVersionStats = field(default_factory=HostAppVersionStats)

    @property
    def true_flops(self) -> float:
        device = self.gpu_peak if self.version == GPU_CUDA else self.p_fpops
        return device * self.efficiency * VERSION_EFFICIENCY[self.version]


@dataclass
class SimReport:
    credit: dict[int, list[float]]  # host id -> granted credit per job after warm-up
    hosts: list[SimHost]
    one_time_cheats: list[tuple[float, float]]  # (granted, default credit) of absurd claims
    runtime_error: list[float]  # |estimated - actual| / actual elapsed, after warm-up
    min_avg_pfc: float

    def mean(self, host_ids: list[int]) -> float:
        return statistics.fmean(c for h in host_ids for c in self.credit[h])

    def version_hosts(self, version: int, *, honest: bool = True) -> list[int]:
        return [h.id for h in self.hosts if h.version == version and (h.inflate == 1.0 or not honest)]


def make_hosts(rng: random.Random, per_version: int) -> list[SimHost]:
    hosts = []
    for version in (CPU_SSE, CPU_AVX, GPU_CUDA):
        for _ in range(per_version):
            gpu = version == GPU_CUDA
            hosts.append(
                SimHost(
                    id=len(hosts),
                    version=version,
                    p_fpops=rng.uniform(1.5e9, 6e9),
                    gpu_peak=rng.uniform(2e11, 2e12) if gpu else 0.0,
                    efficiency=rng.uniform(0.03, 0.12) if gpu else rng.uniform(0.25, 0.6),
                )
            )
    return hosts


def simulate(
    *,
    policy: CreditPolicy,
    replicated: bool,
    rounds: int = 80,
    warmup: int = 40,
    per_version: int = 12,
    delay_bound: float = 86400.0,
    cheater: bool = True,
    cheat_from: int = 0,
    absurd_rounds: tuple[int, ...] = (),
    seed: int = 3,
) -> SimReport:
    rng = random.Random(seed)
    hosts = make_hosts(rng, per_version)
    if cheater:
        hosts[0].inflate = 10.0
    av = {v: AppVersionStats() for v in USAGE}
    min_avg_pfc = 0.0
    credit: dict[int, list[float]] = {h.id: [] for h in hosts}
    cheats: list[tuple[float, float]] = []
    runtime_error: list[float] = []

    for r in range(rounds):
        now = T0 + r * ROUND
        claims: dict[int, PfcClaim] = {}
        absurd_host = hosts[per_version + 1] if r in absurd_rounds else None
        for h in hosts:
            h.hav = probation_on_send(h.hav, delay_bound=delay_bound, now=now, policy=policy)
            peak = peak_flops(USAGE[h.version], p_fpops=h.p_fpops, gpu_peak_flops=h.gpu_peak)
            inflate = h.inflate if r >= cheat_from else 1.0
            elapsed = WORK / h.true_flops * rng.uniform(0.95, 1.05) * inflate
            if r >= warmup:
                est = estimate_flops(peak_flops=peak, hav_et=h.hav.et, av_pfc=av[h.version].pfc)
                predicted = FPOPS_EST / est.flops
                runtime_error.append(abs(predicted - elapsed) / elapsed)
            if h is absurd_host:
                elapsed = 1e304 / peak if r == absurd_rounds[0] else 2 * FPOPS_BOUND / peak
            job = ValidatedJob(
                app_version_id=h.version,
                fpops_est=FPOPS_EST,
                fpops_bound=FPOPS_BOUND,
                elapsed_time=elapsed,
                peak_flops=peak,
                sent_time=now,
                received_time=now + elapsed,
            )
            h.hav = host_app_version_on_outcome(
                h.hav,
                JobOutcome.VALID,
                now=now + ROUND / 2,
                delay_bound=delay_bound,
                reference_pfc_avg=av[h.version].pfc.avg,
                max_jobs_per_day_init=0,
                unreplicated=not replicated,
                policy=policy,
            )
            claim = claimed_pfc(
                job,
                hav=h.hav,
                app_version=av[h.version],
                min_avg_pfc=min_avg_pfc,
                now=now + ROUND / 2,
                policy=policy,
            )
            h.hav = claim.host_app_version
            claims[h.id] = claim

        # Grant: alone, or in random pairs (quorum 2) sharing one workunit.
        order = [h.id for h in hosts]
        if replicated:
            rng.shuffle(order)
        groups = [order[i : i + 2] for i in range(0, len(order), 2)] if replicated else [[i] for i in order]
        for group in groups:
            grant = granted_credit(
                [claims[i] for i in group],
                fpops_est=FPOPS_EST,
                fpops_bound=FPOPS_BOUND,
                min_avg_pfc=min_avg_pfc,
                policy=policy,
            )
            for i in group:
                if absurd_host is not None and i == absurd_host.id:
                    cheats.append((grant.credit, default_pfc(FPOPS_EST, min_avg_pfc) * COBBLESTONE_SCALE))
                elif r >= warmup:
                    credit[i].append(grant.credit)

        # End of the validator pass: buffered app-version samples.
        for h in hosts:
            sample = claims[h.id].av_pfc_sample
            if sample is not None:
                pfc, _ = av[h.version].pfc.update(sample, policy.version_average)
                av[h.version] = replace(av[h.version], pfc=pfc)

        # The main feeder's normalization (every 10 minutes; once per simulated hour here).
        result = normalize_app_versions(
            [VersionPfc(v, USAGE[v].gpu_type is not None, av[v].pfc) for v in av], policy=policy
        )
        for s in result.scales:
            av[s.app_version_id] = replace(av[s.app_version_id], pfc_scale=s.pfc_scale)
        if result.min_avg_pfc is not None:
            min_avg_pfc = result.min_avg_pfc

    return SimReport(
        credit=credit,
        hosts=hosts,
        one_time_cheats=cheats,
        runtime_error=runtime_error,
        min_avg_pfc=min_avg_pfc,
    )


def spread(values: list[float]) -> float:
    """max/min - 1: how far apart the largest and smallest of some means are."""
    return max(values) / min(values) - 1
