"""Cross-project normalization with several projects, down to the credit a GPU-only app's job
is granted (the versions V of such an app are scaled by S(V))."""

# The fixtures come from another suite's conftest, imported below; tests name them as arguments.
# ruff: noqa: F811

from __future__ import annotations

import pytest

from apps.applications.models import AppVersion
from apps.core.domain.resources import COBBLESTONE_SCALE
from apps.credit.cross_project_services import cross_project_normalize
from apps.credit.services import CreditJob, CreditWorkunit, credit_grant
from tests.credit_web.conftest import gpu_only_app, linux, mixed_app  # noqa: F401  (fixtures)
from tests.factories import AccountFactory, AppFactory, AppVersionFactory, HostFactory, ProjectFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def second_mixed_app(linux):
    """Project "mixed2": its cuda version is a third as efficient as its CPU one, with a third of
    project "mixed"'s recent GPU credit."""
    app = AppFactory(project=ProjectFactory(slug="mixed2"), name="sim2")
    AppVersionFactory(app=app, platform=linux, version_num=100, expavg_credit=400.0, pfc_scale=1.0)
    AppVersionFactory(
        app=app,
        platform=linux,
        version_num=100,
        plan_class="cuda",
        proc_type="NVIDIA",
        gpu_usage=1,
        expavg_credit=1000.0,
        pfc_scale=1 / 3,
    )
    return app


def test_a_gpu_only_apps_jobs_are_scaled_by_the_credit_weighted_factor_of_the_mixed_projects(
    mixed_app, second_mixed_app, gpu_only_app, now
):
    cross_project_normalize(now=now, external=False)
    expected = (3000.0 * 0.1 + 1000.0 / 3) / 4000.0
    version = AppVersion.objects.get(app=gpu_only_app)
    assert version.pfc_scale == pytest.approx(expected)

    host = HostFactory(account=AccountFactory(project=gpu_only_app.project), project=gpu_only_app.project)
    elapsed, peak = 600.0, 2e12
    [credit] = credit_grant(
        workunit=CreditWorkunit(app_id=gpu_only_app.id, fpops_est=1e14, fpops_bound=1e17, delay_bound=86400),
        jobs=[
            CreditJob(
                result_id=1,
                host_id=host.id,
                account_id=host.account_id,
                app_version_id=version.id,
                anonymous_proc_type="",
                elapsed_time=elapsed,
                flops_estimate=peak,
                sent_time=now.timestamp() - elapsed,
                received_time=now.timestamp(),
            )
        ],
        now=now,
    )
    # The host's own average is not settled: no host scaling, only S(V).
    assert credit.granted_credit == pytest.approx(elapsed * peak * expected * COBBLESTONE_SCALE)
