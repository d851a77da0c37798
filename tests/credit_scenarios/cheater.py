"""A credit scenario on the database: honest CPU and GPU hosts and one host that reports 100
times its elapsed time, run through the validator's credit service and the 10-minute feeder.

Every round each host completes one job of the same size (true work ``WORK``, estimate
``FPOPS_EST``, bound 1000 times the estimate, so the cheater's claims pass the sanity check),
in a shuffled order; the cheater does ``jobs`` of them, from round ``joins`` on. Each job goes
through ``credit_grant`` as the validator calls it for an unreplicated job (the app has
min_quorum 1, as adaptive replication makes common, so every claim is granted as it stands),
and each round ends with the feeder's ``credit_normalize_app``. Hosts differ in peak speed and
efficiency (seeded). ``run`` returns each host's granted credit per job, so a test compares
runs with and without the cheater.
"""

from __future__ import annotations

import random
import statistics
from dataclasses import dataclass
from datetime import datetime, timedelta

from apps.applications.models import App, AppVersion
from apps.credit.services import CreditJob, CreditWorkunit, credit_grant, credit_normalize_app
from apps.hosts.models import Host
from apps.projects.models import Project
from tests.factories import AccountFactory, AppFactory, AppVersionFactory, HostFactory, PlatformFactory

FPOPS_EST = 1e13
WORK = 3e13  # true FLOPs of every job
FPOPS_BOUND = 1000 * FPOPS_EST
ROUND = timedelta(hours=1)
INFLATE = 100.0  # the cheater's elapsed time is this many times the real one


@dataclass(frozen=True)
class SimHost:
    host: Host
    version: AppVersion
    peak: float
    efficiency: float
    inflate: float = 1.0
    joins: int = 0  # the round of its first job
    jobs: int = 1  # jobs per round


@dataclass
class Figures:
    """Granted credit per job by host id, as (round, credit) pairs."""

    credit: dict[int, list[tuple[int, float]]]
    honest_cpu: list[int]
    honest_gpu: list[int]
    cheater: int | None

    def mean(self, host_ids: list[int], since: int = 0) -> float:
        """Mean credit per job of the hosts' jobs from round ``since`` on."""
        return statistics.fmean(c for h in host_ids for r, c in self.credit[h] if r >= since)


def setup(
    project: Project,
    *,
    n_cpu: int,
    n_gpu: int,
    cheater: bool,
    seed: int = 7,
    cpu_efficiency: tuple[float, float] = (0.25, 0.6),
    cheater_joins: int = 0,
    cheater_jobs: int = 1,
) -> tuple[App, list[SimHost]]:
    """An app (min_quorum 1) with a CPU and a CUDA version, ``n_cpu`` and ``n_gpu`` honest hosts
    and, with ``cheater``, a CPU host that inflates its elapsed time from round ``cheater_joins``."""
    rng = random.Random(seed)
    platform = PlatformFactory()
    app = AppFactory(project=project, name="clim", min_quorum=1, target_nresults=1)
    cpu = AppVersionFactory(app=app, platform=platform, version_num=100)
    gpu = AppVersionFactory(
        app=app, platform=platform, version_num=100, plan_class="cuda", proc_type="nvidia"
    )
    hosts = []
    for i in range(n_cpu + n_gpu):
        is_gpu = i >= n_cpu
        host = HostFactory(account=AccountFactory(project=project), project=project)
        hosts.append(
            SimHost(
                host,
                gpu if is_gpu else cpu,
                peak=rng.uniform(2e11, 2e12) if is_gpu else rng.uniform(1.5e9, 6e9),
                efficiency=rng.uniform(0.03, 0.12) if is_gpu else rng.uniform(*cpu_efficiency),
            )
        )
    if cheater:
        host = HostFactory(account=AccountFactory(project=project), project=project)
        hosts.append(
            SimHost(
                host, cpu, peak=3e9, efficiency=0.4, inflate=INFLATE, joins=cheater_joins, jobs=cheater_jobs
            )
        )
    return app, hosts


def run(
    project: Project, app: App, hosts: list[SimHost], *, rounds: int, start: datetime, seed: int = 11
) -> Figures:
    rng = random.Random(seed)
    credit: dict[int, list[tuple[int, float]]] = {h.host.id: [] for h in hosts}
    result_id = 0
    for r in range(rounds):
        now = start + r * ROUND
        batch = [h for h in hosts if r >= h.joins for _ in range(h.jobs)]
        rng.shuffle(batch)  # the feeder's pass comes between jobs of every host
        for h in batch:
            result_id += 1
            elapsed = WORK / (h.peak * h.efficiency) * rng.uniform(0.95, 1.05) * h.inflate
            [granted] = credit_grant(
                workunit=CreditWorkunit(
                    app_id=app.id,
                    fpops_est=FPOPS_EST,
                    fpops_bound=FPOPS_BOUND,
                    delay_bound=86400,
                    unreplicated=True,
                ),
                jobs=[
                    CreditJob(
                        result_id=result_id,
                        host_id=h.host.id,
                        account_id=h.host.account_id,
                        app_version_id=h.version.id,
                        anonymous_proc_type="",
                        elapsed_time=elapsed,
                        flops_estimate=h.peak,
                        sent_time=(now - ROUND).timestamp(),
                        received_time=now.timestamp(),
                    )
                ],
                now=now,
            )
            credit[h.host.id].append((r, granted.granted_credit))
        credit_normalize_app(app_id=app.id)
    honest = [h for h in hosts if h.inflate == 1.0]
    return Figures(
        credit=credit,
        honest_cpu=[h.host.id for h in honest if not h.version.is_gpu],
        honest_gpu=[h.host.id for h in honest if h.version.is_gpu],
        cheater=next((h.host.id for h in hosts if h.inflate != 1.0), None),
    )
