"""Database-level invariants of the domain model."""

import pytest
from django.db import IntegrityError, transaction

from apps.core.domain.average import HOST_AVERAGE
from apps.hosts.models import HostAppVersion
from apps.work.models import Workunit
from tests.factories import (
    AppFactory,
    AppVersionFactory,
    HostAppVersionFactory,
    HostFactory,
    PlatformFactory,
    WorkunitFactory,
)

pytestmark = pytest.mark.django_db


def test_an_app_version_is_unique_per_app_platform_version_and_plan_class():
    version = AppVersionFactory(plan_class="cuda")
    with pytest.raises(IntegrityError), transaction.atomic():
        AppVersionFactory(app=version.app, platform=version.platform, version_num=100, plan_class="cuda")


def test_workunit_target_below_quorum_is_rejected_by_the_database():
    app = AppFactory()
    with pytest.raises(IntegrityError), transaction.atomic():
        Workunit.objects.create(project=app.project, app=app, name="w", min_quorum=3, target_nresults=2)


def test_workunit_bound_below_estimate_is_rejected_by_the_database():
    app = AppFactory()
    with pytest.raises(IntegrityError), transaction.atomic():
        Workunit.objects.create(project=app.project, app=app, name="w", rsc_fpops_est=10, rsc_fpops_bound=1)


def test_workunit_names_are_unique_within_a_project():
    wu = WorkunitFactory(name="same")
    with pytest.raises(IntegrityError), transaction.atomic():
        WorkunitFactory(app=wu.app, name="same")


def test_host_app_version_needs_a_version_or_an_anonymous_resource():
    host = HostFactory()
    app = AppFactory(project=host.project)
    with pytest.raises(IntegrityError), transaction.atomic():
        HostAppVersion.objects.create(host=host, app=app, app_version=None, anonymous_proc_type="")


def test_anonymous_host_app_version_has_the_seed_resource_code():
    host = HostFactory()
    app = AppFactory(project=host.project)
    hav = HostAppVersion.objects.create(host=host, app=app, anonymous_proc_type="NVIDIA")
    assert hav.app_version_code == -3


def test_one_anonymous_record_per_host_app_and_resource():
    host = HostFactory()
    app = AppFactory(project=host.project)
    HostAppVersion.objects.create(host=host, app=app, anonymous_proc_type="CPU")
    with pytest.raises(IntegrityError), transaction.atomic():
        HostAppVersion.objects.create(host=host, app=app, anonymous_proc_type="CPU")


def test_average_columns_round_trip_through_the_database():
    hav = HostAppVersionFactory()
    value = hav.et
    for sample in (2.0, 4.0, 6.0):
        value, _ = value.update(sample, HOST_AVERAGE)
    hav.et = value
    hav.save()
    hav.refresh_from_db()
    assert (hav.et_n, hav.et_avg) == (3, 4.0)
    assert hav.et == value


def test_platforms_are_shared_by_name():
    assert PlatformFactory().pk == PlatformFactory().pk
