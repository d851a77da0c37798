"""The cheat bounds are the project's settings, edited in its admin form and used by credit."""

from __future__ import annotations

import pytest

from apps.credit.convert import credit_policy
from tests.factories import AppFactory, ProjectFactory
from tests.projects.test_project_admin import post_change

pytestmark = pytest.mark.django_db


def test_the_defaults_are_boincs_caps_with_the_median_and_a_claim_cap():
    policy = credit_policy(AppFactory())
    assert (
        policy.version_average.limit,
        policy.host_average.limit,
        policy.host_scale_max,
        policy.version_median,
        policy.claim_cap,
    ) == (10, 10, 10, True, 10)


def test_the_project_admin_sets_the_cheat_bounds_and_credit_uses_them(admin_client):
    project = ProjectFactory()
    response = post_change(
        admin_client,
        project,
        credit_version_sample_cap="100",
        credit_host_sample_cap="20",
        credit_host_scale_max="5",
        credit_claim_cap="0",
    )
    assert response.status_code == 302
    project.refresh_from_db()
    policy = credit_policy(AppFactory(project=project))
    assert (
        policy.version_average.limit,
        policy.host_average.limit,
        policy.host_scale_max,
        policy.claim_cap,
    ) == (
        100,
        20,
        5,
        0,
    )


def test_a_sample_cap_below_one_is_refused_with_the_fields_error(admin_client):
    project = ProjectFactory()
    response = post_change(admin_client, project, credit_version_sample_cap="0.5")
    assert response.status_code == 200
    assert "Ensure this value is greater than or equal to 1" in response.content.decode()
