"""Database work of the emulator: jobs and accounts for live mode, and scenario runs for the admin."""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor
from datetime import datetime
from typing import TypeVar, cast

from django.db import models, transaction
from django.db.models import Avg

from apps.applications.services import plan_class_spec
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
from apps.emulator.models import EmulationRun, Scenario
from apps.projects.models import Project
from apps.volunteers.models import Account, make_passwd_hash
from apps.work.models import OutputFile, Result, Workunit
from apps.work.services import JobSpec, OutputSpec, workunits_create
from apps.work.services.create import DEFAULT_FPOPS_EST

_M = TypeVar("_M", bound=models.Model)


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


def project_jobs_add(*, project: Project, njobs: int, prefix: str, now: datetime | None = None) -> int:
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
