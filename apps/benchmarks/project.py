"""The scheduler benchmark's project: a CPU app and a CUDA app, many jobs, accounts for its hosts."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from django.db import transaction

from apps.applications.services import AppFileSpec, app_create, app_version_add
from apps.core.db import analyze_tables
from apps.emulator.live.rpc import PLATFORM
from apps.emulator.services import accounts_create, workunits_clone
from apps.projects.models import Project
from apps.projects.services import project_create
from apps.work.models import OutputFile, Result, Workunit
from apps.work.services import JobSpec, OutputSpec, workunits_create

# (app name, plan classes of its versions, job size, share of the jobs). Jobs are sized for
# their device, as real projects do: an hour on a 4 GFLOPS CPU core, ten minutes on a
# 20 TFLOPS GPU (40 on a 5 TFLOPS one).
BENCH_APPS = (
    ("bench", ("",), 1.44e13, 0.8),
    ("bench_gpu", ("cuda",), 1.2e16, 0.2),
)
_WORKER = (
    "#!/bin/sh\n# Cobblestone benchmark app: the emulated hosts never run it.\necho 0 > boinc_finish_called\n"
)


@dataclass(frozen=True, slots=True)
class BenchProject:
    project: Project
    authenticators: tuple[str, ...]


def bench_project_create(
    *, slug: str, njobs: int, naccounts: int, now: datetime | None = None, batch: int = 2000
) -> BenchProject:
    """A project for load tests: a CPU app and a CUDA app, ``njobs`` jobs, accounts.

    Quorum 1, no daily quota to speak of and no request delay, so every dispatched job
    counts; each job has one small output file to upload.
    """
    project = project_create(
        slug=slug,
        name=f"Benchmark {slug}",
        daily_result_quota=100_000,
        max_wus_to_send=10,
        request_delay=0,
    ).project
    apps = []
    with tempfile.TemporaryDirectory() as scratch:
        worker = Path(scratch) / "bench_worker.sh"
        worker.write_text(_WORKER)
        with transaction.atomic():
            for name, plan_classes, _, _ in BENCH_APPS:
                apps.append(
                    app_create(project=project, name=name, user_friendly_name=name, delay_bound=7 * 86400)
                )
                for n, plan_class in enumerate(plan_classes):
                    app_version_add(
                        project=project,
                        app_name=name,
                        version_num=100 + n,
                        platform_name=PLATFORM,
                        plan_class=plan_class,
                        files=[AppFileSpec(path=worker)],
                    )
    outputs = (OutputSpec(open_name="out.txt", max_nbytes=4096),)
    for app, (name, _, fpops, fraction) in zip(apps, BENCH_APPS, strict=True):
        count = max(int(njobs * fraction), 1)
        template = workunits_create(
            project=project,
            app=app,
            jobs=[
                JobSpec(
                    name=f"{name}_{0:07d}", outputs=outputs, rsc_fpops_est=fpops, rsc_fpops_bound=fpops * 20
                )
            ],
            now=now,
        )[0]
        for first in range(1, count, batch):
            names = [f"{name}_{i:07d}" for i in range(first, min(first + batch, count))]
            workunits_clone(template=template, names=names)
    analyze_tables(Workunit, Result, OutputFile)
    return BenchProject(project=project, authenticators=accounts_create(project=project, count=naccounts))
