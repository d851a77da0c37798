"""add_app and update_app set an app's validator, scripts and assimilator, and refuse ones
that cannot work with a clear error."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from apps.applications.models import App
from apps.projects.services import project_create
from tests.applications.test_app_clean import admin_save
from tests.factories import AppFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def project():
    project = project_create(slug="proj", name="Proj").project
    call_command("add_app", "--project", "proj", "sim", stdout=StringIO())
    return project


def _update(*args: str) -> None:
    call_command("update_app", "--project", "proj", "sim", *args, stdout=StringIO())


def test_update_app_sets_a_python_validator_by_dotted_path(project):
    _update("--validator", "tests.backend.science.NumberValidator")
    assert App.objects.get(name="sim").validator == "tests.backend.science.NumberValidator"


def test_update_app_refuses_a_validator_that_does_not_import(project):
    with pytest.raises(CommandError, match=r"validator: cannot import 'nowhere\.validator'"):
        _update("--validator", "nowhere.validator")
    assert App.objects.get(name="sim").validator == "bitwise"


def test_update_app_refuses_a_validator_without_its_functions(project):
    with pytest.raises(CommandError, match="has no function init_result, compare_results"):
        _update("--validator", "tests.backend.conftest")


def test_add_app_takes_the_script_validator_and_assimilator(project):
    call_command(
        "add_app",
        "--project",
        "proj",
        "scripted",
        "--init_script",
        "/srv/bin/check files runtime",
        "--compare_script",
        "/srv/bin/compare files files2",
        "--assimilate_script",
        "/srv/bin/store files2 wu_name",
        stdout=StringIO(),
    )
    app = App.objects.get(name="scripted")
    assert (app.init_script, app.compare_script, app.assimilate_script) == (
        "/srv/bin/check files runtime",
        "/srv/bin/compare files files2",
        "/srv/bin/store files2 wu_name",
    )


def test_update_app_refuses_a_badly_quoted_command(project):
    with pytest.raises(CommandError, match="init_script: cannot split"):
        _update("--init_script", '/srv/bin/check "files')


def test_update_app_refuses_an_assimilator_and_an_assimilate_script_together(project):
    _update("--assimilate_script", "/srv/bin/store")
    with pytest.raises(CommandError, match="not both"):
        _update("--assimilator", "apps.work.services.assimilator.copy_outputs")


def test_admin_refuses_a_validator_without_its_functions(admin_client):
    app = AppFactory()
    response = admin_save(admin_client, app, validator="tests.backend.conftest")
    assert (
        "validator: &#x27;tests.backend.conftest&#x27; has no function init_result"
        in response.content.decode()
    )
    app.refresh_from_db()
    assert app.validator == "bitwise"


def test_admin_saves_a_script_validator(admin_client):
    app = AppFactory()
    response = admin_save(
        admin_client, app, init_script="/srv/bin/check files", compare_script="cmp files files2"
    )
    assert response.status_code == 302
    app.refresh_from_db()
    assert (app.init_script, app.compare_script) == ("/srv/bin/check files", "cmp files files2")
