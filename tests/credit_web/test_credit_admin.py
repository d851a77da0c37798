"""The credit view of an app in the admin: figures, links and "recompute now"."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from apps.applications.models import App, AppVersion
from apps.credit.admin import histogram_bars
from apps.credit.domain.distribution import credit_distribution
from apps.credit.models import PlanClassScale
from apps.work.domain.states import ServerState, ValidateState
from tests.factories import HostAppVersionFactory, ResultFactory, WorkunitFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client):
    # force_login: no password hashing, which dominates these tests' time otherwise.
    client.force_login(get_user_model().objects.create_superuser("boss", "boss@example.com", None))
    return client


def url(app: App) -> str:
    return f"/admin/credit/planclassscale/app/{app.pk}/"


def test_view_shows_each_versions_scale_and_min_avg_pfc(admin_client, mixed_app):
    App.objects.filter(pk=mixed_app.pk).update(min_avg_pfc=0.25)
    body = admin_client.get(url(mixed_app)).content.decode()
    assert 'id="version-scales"' in body
    assert '<td class="pfc-scale" data-label="pfc_scale">0.1</td>' in body
    assert '<td class="pfc-scale" data-label="pfc_scale">1</td>' in body
    assert '<td id="min-avg-pfc">0.25</td>' in body


def test_view_counts_hosts_on_probation_and_links_the_filtered_list(admin_client, mixed_app):
    version = mixed_app.versions.first()
    HostAppVersionFactory(app_version=version, scale_probation=True)
    HostAppVersionFactory(app_version=version, scale_probation=False)
    body = admin_client.get(url(mixed_app)).content.decode()
    link = f"/admin/hosts/hostappversion/?app__id__exact={mixed_app.pk}&amp;scale_probation__exact=1"
    assert f'<a href="{link}">1</a> of 2' in body
    listing = admin_client.get(link.replace("&amp;", "&"))
    assert listing.status_code == 200
    assert len(listing.context["cl"].result_list) == 1


def test_view_shows_the_credit_per_job_distribution(admin_client, mixed_app):
    wu = WorkunitFactory(app=mixed_app)
    for credit in (10.0, 20.0, 30.0, 40.0, 0.0):
        ResultFactory(
            workunit=wu,
            server_state=ServerState.OVER,
            validate_state=ValidateState.VALID if credit else ValidateState.INVALID,
            granted_credit=credit,
        )
    body = admin_client.get(url(mixed_app)).content.decode()
    assert "latest 4 credited results: mean 25.00" in body
    assert '<svg class="chart" id="credit-histogram"' in body
    assert body.count("<rect ") == 20


def test_view_without_results_says_so(admin_client, mixed_app):
    assert "No credited results yet." in admin_client.get(url(mixed_app)).content.decode()


def test_recompute_now_applies_the_cross_project_factor(admin_client, mixed_app, gpu_only_app):
    response = admin_client.post(url(gpu_only_app), follow=True)
    assert response.redirect_chain == [(url(gpu_only_app), 302)]
    assert PlanClassScale.objects.get(plan_class="cuda").scale == pytest.approx(0.1)
    assert AppVersion.objects.get(app=gpu_only_app).pfc_scale == pytest.approx(0.1)
    messages = [str(m) for m in response.context["messages"]]
    assert messages == [
        "Recomputed: 2 plan-class factor(s) from 3 version rows (0 source(s) failed); "
        "2 row(s) of gpuapp changed."
    ]


def test_recompute_needs_change_permission(client, mixed_app):
    user = get_user_model().objects.create_user("viewer", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="view_app"))
    client.force_login(user)
    assert client.get(url(mixed_app)).status_code == 200
    assert client.post(url(mixed_app)).status_code == 403
    assert not PlanClassScale.objects.exists()


def test_staff_without_view_permission_is_refused(client, mixed_app):
    client.force_login(get_user_model().objects.create_user("nobody", is_staff=True))
    assert client.get(url(mixed_app)).status_code == 403


def test_app_change_page_links_the_credit_view(admin_client, mixed_app):
    body = admin_client.get(f"/admin/applications/app/{mixed_app.pk}/change/").content.decode()
    assert body.count(f'href="{url(mixed_app)}"') == 2


def test_histogram_bars_scale_to_the_tallest_bin():
    bars = histogram_bars(credit_distribution([1.0, 1.0, 2.0]))
    assert max(b.height for b in bars) == 160 - 2 * 24
    assert [b.count for b in bars if b.count] == [2, 1]
    assert histogram_bars(None) == []
