"""Production without collectstatic: pages are still served, and `check --deploy` and
/health/ say what to run."""

from __future__ import annotations

import json

import pytest
from health_check.exceptions import ServiceUnavailable

from apps.ops.health import StaticFiles
from apps.ops.static import collectstatic_ran, static_names

PRODUCTION_STORAGE = "apps.ops.static.CollectedStaticStorage"


@pytest.fixture
def production_static(settings, tmp_path):
    """The production storage on an empty STATIC_ROOT: collectstatic has not run."""
    settings.STATIC_ROOT = tmp_path / "static"
    settings.STATIC_ROOT.mkdir()
    settings.STORAGES = {**settings.STORAGES, "staticfiles": {"BACKEND": PRODUCTION_STORAGE}}
    return settings.STATIC_ROOT


def write_manifest(static_root, paths):
    """collectstatic's manifest: each static file's name and its stored (hashed) name."""
    (static_root / "staticfiles.json").write_text(json.dumps({"paths": paths, "version": "1.1", "hash": "x"}))


def collected(names):
    return {name: name for name in names}


def test_production_settings_use_the_storage_that_serves_pages_without_collectstatic():
    from tests.core.test_settings_faults import value

    storages = value("settings.STORAGES", DEBUG="false", SECRET_KEY="x" * 50)
    assert storages["staticfiles"]["BACKEND"] == PRODUCTION_STORAGE


@pytest.mark.django_db
def test_a_page_is_served_before_collectstatic_runs(client, production_static):
    response = client.get("/admin/login/")
    assert response.status_code == 200
    assert b'href="/static/admin/css/base.css"' in response.content


@pytest.mark.django_db
def test_a_collected_file_is_named_by_its_hashed_name(client, production_static):
    write_manifest(production_static, {"admin/css/base.css": "admin/css/base.0123456789ab.css"})
    response = client.get("/admin/login/")
    assert b'href="/static/admin/css/base.0123456789ab.css"' in response.content


def test_check_deploy_names_the_command_when_collectstatic_has_not_run(production_static):
    [error] = collectstatic_ran()
    assert error.id == "ops.E001"
    assert "collectstatic has not run" in error.msg
    assert "manage.py collectstatic --noinput" in error.hint


def test_check_deploy_names_a_file_added_since_collectstatic_ran(production_static):
    write_manifest(production_static, collected(static_names() - {"admin/css/base.css"}))
    [error] = collectstatic_ran()
    assert "1 static file(s) not collected, first admin/css/base.css" in error.msg


def test_check_deploy_is_clean_once_every_file_is_collected(production_static):
    write_manifest(production_static, collected(static_names()))
    assert collectstatic_ran() == []


def test_health_reports_it_with_the_command(production_static):
    with pytest.raises(ServiceUnavailable, match=r"collectstatic has not run: run manage\.py collectstatic"):
        StaticFiles().run()


def test_health_is_content_without_a_manifest_storage():
    StaticFiles().run()
