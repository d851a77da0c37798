"""Platforms, apps and app versions (with their files): small tables, read whole on every
run and matched by name, so a second run finds each row in place."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from django.db import transaction

from apps.applications.domain.plan_classes import BUILTIN_PLAN_CLASSES, PlanClassSpec
from apps.applications.models import App, AppFile, AppVersion
from apps.applications.services import AppError, plan_class_spec
from apps.boinc_import.domain import (
    Mapped,
    RowRefused,
    VersionRef,
    map_app,
    map_app_version,
    map_platform,
)
from apps.boinc_import.queries import rows_insert
from apps.boinc_import.services.engine import ImportRun, Issue, issues_replace
from apps.boinc_import.services.files import FileClash, boinc_file, file_place, md5_of
from apps.projects.models import Platform
from apps.protocol import ProtocolError, parse_stored_doc

PLATFORM_COLUMNS = "id, name, user_friendly_name, deprecated"
APP_COLUMNS = (
    "id, create_time, name, user_friendly_name, deprecated, weight, beta, min_avg_pfc, host_scale_check,"
    " non_cpu_intensive, homogeneous_redundancy, homogeneous_app_version"
)
VERSION_COLUMNS = (
    "id, create_time, appid, version_num, platformid, xml_doc, min_core_version, max_core_version,"
    " deprecated, plan_class, pfc_n, pfc_avg, pfc_scale, expavg_credit, expavg_time, beta"
)


def platforms_import(run: ImportRun) -> None:
    """Platforms are shared by every project of the portal: found by name or added."""
    started = time.monotonic()
    rows = run.source.rows(f"SELECT {PLATFORM_COLUMNS} FROM platform ORDER BY id")
    known = dict(Platform.objects.values_list("name", "id"))
    issues: list[Issue] = []
    added = 0
    for row in rows:
        try:
            mapped = map_platform(row)
        except RowRefused as exc:
            issues.append(Issue("platform", row["id"], 0, True, str(exc)))
            continue
        name = mapped.values["name"]
        if name not in known:
            added += 1
            if not run.dry_run:
                known[name] = Platform.objects.get_or_create(name=name, defaults=mapped.values)[0].pk
        run.platforms[row["id"]] = known.get(name, -row["id"])  # a dry run's placeholder id
        issues += _notes("platform", row["id"], mapped)
    _finish(run, "platform", len(rows), added, issues, started)


def apps_import(run: ImportRun) -> None:
    started = time.monotonic()
    rows = run.source.rows(f"SELECT {APP_COLUMNS} FROM app ORDER BY id")
    known = _existing_apps(run)
    issues: list[Issue] = []
    new: list[dict[str, object]] = []
    for row in rows:
        try:
            mapped = map_app(row, now=run.now_unix)
        except RowRefused as exc:
            issues.append(Issue("app", row["id"], 0, True, str(exc)))
            continue
        issues += _notes("app", row["id"], mapped)
        if mapped.values["name"] not in known:
            new.append({**mapped.values, "project_id": run.project.pk})
    if new and not run.dry_run:
        with transaction.atomic():
            rows_insert(App, new)
        known = _existing_apps(run)
    for row in rows:
        name = row["name"]
        if name in known:
            run.apps[row["id"]] = known[name]
        elif run.dry_run and not any(i.source_id == row["id"] and i.refused for i in issues):
            run.apps[row["id"]] = -row["id"]
    _finish(run, "app", len(rows), len(new), issues, started)


def _existing_apps(run: ImportRun) -> dict[str, int]:
    if run.project.pk is None:
        return {}
    return dict(App.objects.filter(project=run.project).values_list("name", "id"))


def app_versions_import(run: ImportRun) -> None:
    """App versions with their files, copied from BOINC's download area and checked
    against the size and MD5 the version's xml_doc gives (the client checks them too)."""
    started = time.monotonic()
    rows = run.source.rows(f"SELECT {VERSION_COLUMNS} FROM app_version ORDER BY id")
    platform_names = dict(Platform.objects.filter(id__in=run.platforms.values()).values_list("id", "name"))
    issues: list[Issue] = []
    added = 0
    for row in rows:
        try:
            version = _map_version(run, row)
            ref, new = _version_store(run, row, version, platform_names)
        except RowRefused as exc:
            issues.append(Issue("app_version", row["id"], 0, True, str(exc)))
            continue
        issues += _notes("app_version", row["id"], version)
        run.versions[row["id"]] = ref
        added += new
    _finish(run, "app_version", len(rows), added, issues, started)


def _map_version(run: ImportRun, row: Mapping[str, Any]) -> Mapped:
    try:
        doc = parse_stored_doc(row["xml_doc"])
    except ProtocolError as exc:
        raise RowRefused(f"xml_doc: {exc}") from None
    try:
        plan = _plan_class(run, str(row["plan_class"] or ""))
    except AppError as exc:
        raise RowRefused(f"{exc}: define it in the admin (Plan classes), then run the import again") from None
    return map_app_version(
        row,
        now=run.now_unix,
        app_id=run.apps.get(int(row["appid"])),
        platform_id=run.platforms.get(int(row["platformid"])),
        doc=doc,
        plan=plan,
    )


def _plan_class(run: ImportRun, name: str) -> PlanClassSpec:
    if run.project.pk is not None:
        return plan_class_spec(project=run.project, name=name)
    if name in BUILTIN_PLAN_CLASSES:  # a dry run before the project exists
        return BUILTIN_PLAN_CLASSES[name]
    raise AppError(f"unknown plan class {name!r}")


def _version_store(
    run: ImportRun, row: Mapping[str, Any], version: Mapped, platform_names: dict[int, str]
) -> tuple[VersionRef, bool]:
    """Place the version's files and write its rows (or find them from an earlier run);
    whether it is new."""
    values = version.values
    download = run.project_dir / "download"
    sources = []
    for file in version.files:
        path = boinc_file(download, file.file_name, fanout=run.fanout, urls=file.download_urls)
        if path is None:
            raise RowRefused(f"file {file.file_name} is not in {download}")
        if path.stat().st_size != file.nbytes or md5_of(path) != file.md5_cksum:
            raise RowRefused(f"file {path} does not match the size and MD5 its xml_doc gives")
        sources.append(path)
    existing = (
        AppVersion.objects.filter(
            app_id=values["app_id"],
            platform_id=values["platform_id"],
            version_num=values["version_num"],
            plan_class=values["plan_class"],
        ).first()
        if run.project.pk
        else None
    )
    version_id = existing.pk if existing else -int(row["id"])
    if existing is None and not run.dry_run:
        try:
            for file, path in zip(version.files, sources, strict=True):
                file_place(path, run.project.download_dir / file.file_name)
        except FileClash as exc:
            raise RowRefused(str(exc)) from None
        with transaction.atomic():
            created = AppVersion.objects.create(**values)
            AppVersion.objects.filter(pk=created.pk).update(create_time=values["create_time"])
            AppFile.objects.bulk_create(
                AppFile(
                    app_version=created,
                    file_name=f.file_name,
                    open_name=f.open_name,
                    main_program=f.main_program,
                    copy_file=f.copy_file,
                    executable=True,
                    md5_cksum=f.md5_cksum,
                    nbytes=f.nbytes,
                    file_signature=f.file_signature,
                    ordinal=i,
                )
                for i, f in enumerate(version.files)
            )
        version_id = created.pk
    ref = VersionRef(
        id=version_id,
        app_id=values["app_id"],
        platform=platform_names.get(values["platform_id"], ""),
        version_num=values["version_num"],
        plan_class=values["plan_class"],
        proc_type=values["proc_type"],
        avg_ncpus=values["avg_ncpus"],
        gpu_usage=values["gpu_usage"],
    )
    return ref, existing is None


def _notes(table: str, source_id: int, mapped: Mapped) -> list[Issue]:
    return [Issue(table, source_id, 0, False, note) for note in mapped.notes]


def _finish(
    run: ImportRun, table: str, read: int, imported: int, issues: list[Issue], started: float
) -> None:
    stats = run.table_stats(table)
    stats.read, stats.imported = read, imported
    stats.seconds = time.monotonic() - started
    issues_replace(run, table, issues)
    run.progress(table, read, read)
