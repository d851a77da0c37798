"""Homogeneous redundancy and homogeneous app version: which hosts and versions may run the
other instances of a workunit once one is out.

An app with ``homogeneous_redundancy`` sends every instance of a workunit to hosts of the
class its first instance went to (``Workunit.hr_class``; apps.hosts.domain.hr); a host
whose class is unknown gets none of its jobs. An app with ``homogeneous_app_version`` runs
every instance with the version the first one was sent with (``Workunit.app_version``);
anonymous-platform hosts get none of its jobs, as in BOINC. Later instances use the
committed version (even one no longer the newest), or wait. A committed version that is
deprecated is replaced by the next send's version, but only when no instance is in
progress. The transitioner releases both commitments when every instance failed.

The checks read only what the candidate query already read; the commitment is one
conditional UPDATE per job sent of such an app, in the RPC's transaction. It skips a
workunit row another RPC holds (that RPC is sending one of its instances now): waiting
could deadlock two RPCs each holding a workunit the other wants, and whichever commits
first decides the class and version, so the other would mostly be refused anyway.
"""

from __future__ import annotations

from collections.abc import Callable

from django.db import connection
from django.db.models import Exists, OuterRef, Q

from apps.applications.models import App, AppVersion
from apps.core.db import placeholders
from apps.hosts.domain.hr import HostDescription, HrType, hr_class
from apps.scheduler.domain.policy import VersionOption
from apps.scheduler.services.catalog import project_catalog
from apps.scheduler.services.context import RpcContext
from apps.scheduler.services.versions import HostVersions, host_resources, plan_class_specs, version_option
from apps.work.domain.states import ServerState
from apps.work.models import Result, Workunit

UNKNOWN_CLASS = "{app} needs a computer whose OS and CPU type the project knows (homogeneous redundancy)"
ANONYMOUS_PLATFORM = "{app} runs only the project's own app versions, not this computer's"


class Homogeneity:
    """The rules of one RPC, for the apps that use either setting."""

    def __init__(self, ctx: RpcContext, versions: HostVersions, apps: dict[int, App]) -> None:
        assert ctx.host is not None
        self.ctx = ctx
        self.versions = versions
        self.apps = apps
        host = HostDescription(ctx.host.os_name, ctx.host.p_vendor, ctx.host.p_model)
        self.host_class: dict[int, int | None] = {t: hr_class(host, t) for t in (HrType.FINE, HrType.COARSE)}
        self._catalog_versions: dict[int, AppVersion] | None = None
        self._committed: dict[int, VersionOption | None] = {}

    @classmethod
    def for_rpc(cls, ctx: RpcContext, versions: HostVersions) -> Homogeneity | None:
        """None (nothing to check on any job) when no app uses either setting."""
        apps = {
            app_id: app
            for app_id, app in versions.apps.items()
            if app.homogeneous_redundancy or app.homogeneous_app_version
        }
        return cls(ctx, versions, apps) if apps else None

    def class_for(self, app: App) -> int | None:
        """This host's class for the app (0 without HR; None when unknown)."""
        if not app.homogeneous_redundancy:
            return 0
        return self.host_class.get(app.homogeneous_redundancy)

    def app_refusal(self, app_id: int) -> str | None:
        """Why this host can get no job of the app at all, or None."""
        app = self.apps.get(app_id)
        if app is None:
            return None
        if self.class_for(app) is None:
            return UNKNOWN_CLASS.format(app=app)
        if app.homogeneous_app_version and self.ctx.req.is_anonymous_platform:
            return ANONYMOUS_PLATFORM.format(app=app)
        return None

    def narrow(
        self, wu: Workunit, allowed: list[VersionOption], usable: Callable[[VersionOption], bool]
    ) -> list[VersionOption]:
        """The versions this host may run ``wu`` with, given its commitments (``allowed``:
        the app's usable versions; ``usable``: whether another one may run now)."""
        app = self.apps[wu.app_id]
        if app.homogeneous_redundancy and wu.hr_class and self.class_for(app) != wu.hr_class:
            return []
        committed = wu.app_version_id
        if not (app.homogeneous_app_version and committed):
            return allowed
        chosen = [o for o in allowed if o.key == committed]
        if chosen:
            return chosen
        version = self._catalog().get(committed)
        if version is None:
            return allowed  # deprecated: any version, if no instance is in progress (commit)
        option = self._committed_option(version)
        return [option] if option is not None and usable(option) else []

    def window_filter(self, app_ids: list[int]) -> tuple[str, list[object]] | None:
        """SQL (on the candidate query's ``r`` and ``w``) that leaves out unsent results of
        workunits committed to another class, so that a host of a small class does not scan
        (and hold locked) the queue of the others; None when no app in ``app_ids`` needs it.
        A rough cut: both of the host's classes pass for any such app; ``narrow`` decides."""
        hr_apps = [a for a in app_ids if a in self.apps and self.apps[a].homogeneous_redundancy]
        if not hr_apps:
            return None
        classes = sorted({0, *(c for c in self.host_class.values() if c is not None)})
        sql = f" AND (w.hr_class IN ({placeholders(classes)})"
        params: list[object] = list(classes)
        if len(hr_apps) < len(app_ids):  # a class stored on another app's workunit binds nothing
            sql += f" OR r.app_id NOT IN ({placeholders(hr_apps)})"
            params += hr_apps
        return sql + ")", params

    def commit(self, result: Result, option: VersionOption) -> bool:
        """Write the workunit's class and version for this send, if they are still free or
        the same (and the row is not being written by another RPC); False: do not send."""
        app = self.apps.get(result.app_id)
        if app is None:
            return True
        wu = result.workunit
        changes: dict[str, object] = {}
        condition = Q()
        if app.homogeneous_redundancy:
            code = self.class_for(app)
            if code is None:
                return False
            changes["hr_class"] = code
            condition &= Q(hr_class=0) | Q(hr_class=code)
        if app.homogeneous_app_version:
            if option.anonymous:
                return False
            changes["app_version_id"] = option.key
            free = Q(app_version__isnull=True) | Q(app_version_id=option.key)
            if wu.app_version_id and wu.app_version_id not in self._catalog():
                # Only a deprecated commitment gets here (narrow); it goes once nothing runs it.
                running = Result.objects.filter(
                    workunit_id=OuterRef("pk"), server_state=ServerState.IN_PROGRESS
                )
                free |= Q(app_version_id=wu.app_version_id) & ~Q(Exists(running))
            condition &= free
        row = Workunit.objects.filter(pk=wu.id)
        if connection.features.has_select_for_update_skip_locked:
            row = row.select_for_update(skip_locked=True)
        if not Workunit.objects.filter(condition, pk__in=row.values("pk")).update(**changes):
            return False
        for name, value in changes.items():
            setattr(wu, name, value)
        return True

    def _catalog(self) -> dict[int, AppVersion]:
        """The project's versions that are not deprecated, newest or not."""
        if self._catalog_versions is None:
            self._catalog_versions = {v.id: v for v in project_catalog(self.ctx.project).versions}
        return self._catalog_versions

    def _committed_option(self, version: AppVersion) -> VersionOption | None:
        """How this host would run a committed version that is not among those offered to
        it (a newer one was released, or it is a test version)."""
        if version.id not in self._committed:
            if version.beta and not self.ctx.prefs.allow_beta_work:
                self._committed[version.id] = None  # test versions only for those who allow them
                return None
            option = version_option(
                self.ctx,
                version,
                resources=host_resources(self.ctx),
                named=plan_class_specs(project_catalog(self.ctx.project)),
                havs=self.versions.havs,
            )
            self._committed[version.id] = option
            if option is not None:
                self.versions.versions[version.id] = version
        return self._committed[version.id]
