"""App.clean: job defaults that every later create_work would refuse, and hooks that do not
import, are refused when the app is saved (the admin, add_app), with create_work's own rules."""

from __future__ import annotations

import math

import pytest
from django.core.exceptions import ValidationError

from apps.applications.domain.job_bounds import MAX_DELAY_BOUND, job_bounds_problems
from apps.applications.models import App
from tests.factories import AppFactory

ADMIN_CHANGE = "/admin/applications/app/{}/change/"


def messages(app: App) -> list[str]:
    with pytest.raises(ValidationError) as caught:
        app.full_clean()
    return caught.value.messages


def admin_save(client, app: App, **changes: object):
    """POST the admin's change form as the page shows it, with ``changes``."""
    form = client.get(ADMIN_CHANGE.format(app.pk)).context["adminform"].form
    data: dict[str, object] = {"versions-TOTAL_FORMS": 0, "versions-INITIAL_FORMS": 0}
    for name in form.fields:
        value = changes.get(name, form[name].value())
        if value is True:
            data[name] = "on"
        elif value is not False and value is not None:  # an unticked box is absent
            data[name] = value
    return client.post(ADMIN_CHANGE.format(app.pk), data)


def test_the_pure_rules_skip_fields_an_app_does_not_have():
    assert job_bounds_problems({"min_quorum": 1, "target_nresults": 1, "delay_bound": 60}) == []


def test_the_pure_rules_refuse_a_delay_bound_past_the_cap():
    (problem,) = job_bounds_problems({"delay_bound": MAX_DELAY_BOUND * 2})
    assert problem.message == "delay_bound must be at most 100000000 seconds (about 3 years)"


def test_the_pure_rules_report_nan_first():
    (problem,) = job_bounds_problems({"delay_bound": math.nan, "min_quorum": 3, "target_nresults": 1})
    assert problem.message == "delay_bound must be a non-negative number, got nan"


@pytest.mark.django_db
def test_quorum_larger_than_target_is_refused():
    app = AppFactory.build(project=AppFactory().project, min_quorum=3, target_nresults=1)
    assert messages(app) == ["target_nresults must be at least min_quorum"]


@pytest.mark.django_db
def test_max_total_results_below_target_is_refused():
    app = AppFactory.build(project=AppFactory().project, max_total_results=0)
    assert messages(app) == ["max_total_results must be at least target_nresults"]


@pytest.mark.django_db
def test_more_replicas_than_create_work_allows_are_refused():
    app = AppFactory.build(project=AppFactory().project, max_error_results=5000)
    assert messages(app) == ["max_error_results must be at most 1000"]


@pytest.mark.django_db
def test_a_huge_delay_bound_is_refused_once_by_its_field():
    app = AppFactory.build(project=AppFactory().project, delay_bound=1e300)
    with pytest.raises(ValidationError) as caught:
        app.full_clean()
    assert caught.value.message_dict == {
        "delay_bound": ["Ensure this value is less than or equal to 100000000."]
    }


@pytest.mark.django_db
def test_an_assimilator_that_does_not_import_is_refused():
    app = AppFactory.build(project=AppFactory().project, assimilator="no.such.module")
    (message,) = messages(app)
    assert message.startswith("assimilator: cannot import 'no.such.module'")


@pytest.mark.django_db
def test_a_sequence_hook_that_is_not_a_function_is_refused():
    app = AppFactory.build(
        project=AppFactory().project, sequence_hook="apps.sequences.domain.rules.MIN_AHEAD"
    )
    assert messages(app) == ["sequence_hook: 'apps.sequences.domain.rules.MIN_AHEAD' is not a function"]


@pytest.mark.django_db
def test_an_app_whose_stored_hook_imports_only_on_workers_can_still_be_edited():
    app = AppFactory(assimilator="science.hooks.assimilate")  # importable on workers only
    app.min_quorum = app.target_nresults = 3
    app.full_clean()


@pytest.mark.django_db
def test_changing_a_hook_to_one_that_does_not_import_is_refused():
    app = AppFactory(assimilator="apps.work.services.assimilator.copy_outputs")
    app.assimilator = "no.such.module"
    (message,) = messages(app)
    assert message.startswith("assimilator: cannot import 'no.such.module'")


@pytest.mark.django_db
def test_an_importable_assimilator_is_accepted():
    app = AppFactory.build(
        project=AppFactory().project, assimilator="apps.work.services.assimilator.copy_outputs"
    )
    app.full_clean()


@pytest.mark.django_db
def test_admin_refuses_a_quorum_larger_than_target(admin_client):
    app = AppFactory()
    response = admin_save(admin_client, app, min_quorum=3, target_nresults=1)
    assert response.status_code == 200
    assert "target_nresults must be at least min_quorum" in response.content.decode()
    app.refresh_from_db()
    assert (app.min_quorum, app.target_nresults) == (1, 1)


@pytest.mark.django_db
def test_admin_refuses_an_assimilator_that_does_not_import(admin_client):
    app = AppFactory()
    response = admin_save(admin_client, app, assimilator="no.such.module")
    assert "assimilator: cannot import" in response.content.decode()
    app.refresh_from_db()
    assert app.assimilator == ""


@pytest.mark.django_db
def test_admin_saves_sound_defaults(admin_client):
    app = AppFactory()
    response = admin_save(admin_client, app, min_quorum=2, target_nresults=3)
    assert response.status_code == 302
    app.refresh_from_db()
    assert (app.min_quorum, app.target_nresults) == (2, 3)
