"""Database work of the emulator: the benchmark project, and scenario runs for the admin."""

from __future__ import annotations

import os
import tempfile
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TypeVar, cast

from django.db import models, transaction
from django.db.models import Avg

from apps.applications.services import AppFileSpec, app_create, app_version_add, plan_class_spec
from apps.core.db import analyze_tables
from apps.core.domain.signing import sign_upload_certificate
from apps.emulator.domain import (
    PolicyName,
    format_report_table,
    load_scenario,
    render_share_chart,
    report_summary,
    run_scenario,
)
from apps.emulator.domain.shaping import AppShape, VersionShape, shape_project, stand_in_project
from apps.emulator.live.rpc import PLATFORM
from apps.emulator.models import EmulationRun, Scenario
from apps.projects.models import Project
from apps.projects.services import project_create
from apps.volunteers.models import Account, make_passwd_hash
from apps.work.models import OutputFile, Result, Workunit
from apps.work.services import JobSpec, OutputSpec, workunits_create
from apps.work.services.create import DEFAULT_FPOPS_EST

_M = TypeVar("_M", bound=models.Model)

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


def workunits_clone(*, template: Workunit, names: list[str]) -> int:
    """Copies of ``template`` (no input files) with their results and signed output files.

    A load-test shortcut: ``workunits_create`` writes one job at a time, about 5 ms each;
    bulk inserts of copies of a job it made are a hundred times faster. Upload
    certificates are still signed per file, since the scheduler would otherwise sign them
    during the benchmark.
    """
    results = list(template.results.all())
    outputs = {r.id: list(r.output_files.all()) for r in results}
    key = template.project.upload_private_key
    with transaction.atomic():
        wus = Workunit.objects.bulk_create([_copy(template, name=name) for name in names])
        pairs = [(r, wu, r.name.replace(template.name, wu.name, 1)) for wu in wus for r in results]
        new_results = Result.objects.bulk_create([_copy(r, workunit=wu, name=name) for r, wu, name in pairs])
        specs = [
            (f, new, f.name.replace(source.name, new.name, 1))
            for (source, _, _), new in zip(pairs, new_results, strict=True)
            for f in outputs[source.id]
        ]
        signatures = _sign_all(key, [(name, f.max_nbytes) for f, _, name in specs])
        OutputFile.objects.bulk_create(
            [
                _copy(f, result=new, name=name, xml_signature=signature)
                for (f, new, name), signature in zip(specs, signatures, strict=True)
            ]
        )
    return len(wus)


def _sign_all(key: str, files: list[tuple[str, int]]) -> list[str]:
    """Upload certificates for many files, on every CPU (each takes about 2 ms)."""
    if not key:
        return [""] * len(files)
    workers = min(os.cpu_count() or 1, 8)
    if workers == 1 or len(files) < 200:
        return [sign_upload_certificate(key, name, size) for name, size in files]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(_sign_one, [(key, name, size) for name, size in files], chunksize=250))


def _sign_one(args: tuple[str, str, int]) -> str:
    return sign_upload_certificate(*args)


def _copy(instance: _M, **changes: object) -> _M:
    """An unsaved copy of a model row with ``changes`` applied (no primary key)."""
    values = {
        f.attname: getattr(instance, f.attname) for f in instance._meta.concrete_fields if not f.primary_key
    }
    for name, value in changes.items():
        field = cast(models.Field, instance._meta.get_field(name))
        if field.is_relation:
            values.pop(field.attname, None)
        values[name] = value
    return type(instance)(**values)


def accounts_create(*, project: Project, count: int, prefix: str = "host") -> tuple[str, ...]:
    """``count`` volunteer accounts for emulated hosts; returns their authenticators.

    They attach with their account keys and have no password: hashing one is slow by
    design (bcrypt, about 70 ms each here)."""
    accounts = [
        Account(
            project=project,
            name=f"Emulated {i}",
            email_addr=f"{prefix}{i:04d}@emulator.example.com",
            passwd_hash=make_passwd_hash(None),
        )
        for i in range(count)
    ]
    with transaction.atomic():
        created = Account.objects.bulk_create(accounts)
    return tuple(a.authenticator for a in created)


def bench_jobs_add(*, project: Project, njobs: int, prefix: str, now: datetime | None = None) -> int:
    """Add ``njobs`` jobs of an hour on a 4 GFLOPS CPU to the first app of ``project``."""
    app = project.apps.filter(deprecated=False).order_by("id").first()
    if app is None:
        return 0
    outputs = (OutputSpec(open_name="out.txt", max_nbytes=4096),)
    template = workunits_create(
        project=project,
        app=app,
        jobs=[JobSpec(name=f"{prefix}_0000000", outputs=outputs, rsc_fpops_est=1.44e13)],
        now=now,
    )[0]
    if njobs > 1:
        workunits_clone(template=template, names=[f"{prefix}_{i:07d}" for i in range(1, njobs)])
    return njobs


# -- scenario runs for the admin ---------------------------------------------------------


def project_app_shapes(*, project: Project) -> list[AppShape]:
    """The project's non-deprecated apps, as ``shape_project`` needs them."""
    shapes = []
    sizes = dict(
        Workunit.objects.filter(project=project)
        .values("app_id")
        .annotate(avg=Avg("rsc_fpops_est"))
        .values_list("app_id", "avg")
    )
    for app in project.apps.filter(deprecated=False).prefetch_related("versions").order_by("name"):
        versions = []
        for version in app.versions.all():
            if version.deprecated:
                continue
            spec = plan_class_spec(project=project, name=version.plan_class)
            usage = spec.gpu_usage if spec.proc_type.is_gpu else spec.avg_ncpus
            versions.append(VersionShape(spec.proc_type, usage or 1.0, multi_thread=spec.multi_thread))
        shapes.append(
            AppShape(
                name=app.name,
                fpops_est=float(sizes.get(app.id) or DEFAULT_FPOPS_EST),
                latency_bound=float(app.delay_bound),
                versions=tuple(versions),
            )
        )
    return shapes


def scenario_run(
    *, scenario: Scenario, policies: list[PolicyName], days: float | None = None, use_project: bool = True
) -> list[EmulationRun]:
    """Run a stored scenario under each policy (fitted to its project's apps) and store the runs.

    Raises ScenarioError if the text is not a valid scenario or no app can run.
    """
    spec = load_scenario(scenario.text)
    if use_project and scenario.project is not None:
        stand_in = stand_in_project(spec, scenario.project.slug)
        spec = shape_project(spec, project=stand_in, apps=project_app_shapes(project=scenario.project))
    runs = []
    for policy in policies:
        report = run_scenario(spec, policy, days=days)
        runs.append(
            EmulationRun(
                scenario=scenario,
                policy=policy.value,
                figures=report_summary(report),
                table=format_report_table(report),
                chart_svg=render_share_chart(report),
            )
        )
    with transaction.atomic():
        return EmulationRun.objects.bulk_create(runs)
