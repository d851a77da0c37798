"""The feeder's sample-median of host averages (Project.credit_version_median)."""

from __future__ import annotations

import pytest

from apps.credit.services import credit_normalize_app
from tests.factories import AppVersionFactory, HostAppVersionFactory, HostFactory, ProjectFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def version():
    version = AppVersionFactory(app__project=ProjectFactory(), pfc_n=120, pfc_avg=60.0)  # inflated mean
    for avg in (5.0, 6.0, 7.0, 600.0):  # three honest hosts and one that inflates 100x
        HostAppVersionFactory(
            app_version=version, host=HostFactory(project=version.app.project), pfc_n=30, pfc_avg=avg
        )
    return version


def test_the_feeder_sets_the_version_average_to_its_hosts_sample_median(version):
    credit_normalize_app(app_id=version.app_id)
    version.refresh_from_db()
    assert (version.pfc_n, version.pfc_avg) == (120, 6.0)
    version.app.refresh_from_db()
    assert version.app.min_avg_pfc == 6.0  # a lone version is its own reference (seed rule)


def test_without_the_median_the_running_average_stays(version):
    project = version.app.project
    project.credit_version_median = False
    project.save(update_fields=["credit_version_median"])
    credit_normalize_app(app_id=version.app_id)
    version.refresh_from_db()
    assert version.pfc_avg == 60.0
