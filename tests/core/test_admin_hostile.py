"""Hand-made admin URLs (a NUL, a year past 9999, integers past 64 bits, garbage ids, pages
and orderings) never get a server error, from any registered admin, on SQLite or PostgreSQL.

The walk covers every ModelAdmin on ``admin.site``, so a new admin is probed without a
change here. Django answers a bad filter with a redirect to ``?e=1``, a bad id with a
redirect to the admin index, a disallowed lookup with a 400: all fine, none is a 5xx.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

import pytest
from django.contrib import admin
from django.contrib.admin.views.main import ChangeList
from django.db import connection, models
from django.test import Client, RequestFactory
from django.urls import reverse

from apps.core.admin_base import GuardedAdminSite, HostileInputGuard
from apps.projects.models import Platform
from tests.factories import (
    HostAppVersionFactory,
    HostCoprocFactory,
    OutputFileFactory,
    ProjectFactory,
    TeamFactory,
    WorkSequenceFactory,
    WorkunitFactory,
)

pytestmark = pytest.mark.django_db

NUL = "\x00"
HUGE = str(2**70)  # past BIGINT, and past what SQLite binds
REGISTRY = sorted(admin.site._registry.values(), key=lambda ma: ma.model._meta.label)
LABELS = [ma.model._meta.label for ma in REGISTRY]

# Garbage Django itself answers (q, o, p), then lookups that each gave a 500 on one engine
# or both before the guard.
GENERIC: list[dict[str, str]] = [
    {"q": NUL},
    {"o": "x.-1.99"},
    {"p": "x"},
    {"pk__in": HUGE},  # SQLite: int too large to convert
    {"pk__range": "1"},  # one value for two placeholders
    {"pk__regex": "("},  # PostgreSQL: invalid regex; SQLite: its regexp function raises
]
BY_KIND: dict[str, list[tuple[str, str]]] = {
    "text": [("exact", f"a{NUL}b")],  # PostgreSQL refuses NUL in text
    "relation": [("exact", HUGE)],  # Django checks the range of an id lookup, not of a relation's
    "date": [("year", "10000"), ("day", "40"), ("gte", "99999-01-01"), ("iso_year", HUGE)],
    "json": [("contains", "x"), ("has_keys", "")],  # SQLite lacks one, chokes on the other
}
DATE_HIERARCHY: list[tuple[str, str]] = [("year", "10000"), ("month", "13"), ("day", "40")]
IDS = ["x", HUGE, f"1{NUL}"]


def _kind(field: models.Field) -> str | None:
    if isinstance(field, models.JSONField):
        return "json"
    if isinstance(field, models.DateField):  # DateTimeField too
        return "date"
    if isinstance(field, models.CharField | models.TextField):
        return "text"
    if isinstance(field, models.ForeignKey):
        return "relation"
    return None


def _filter_parameters(model_admin: admin.ModelAdmin, superuser: Any) -> list[str]:
    """The parameters the list's own filters read (``create_time__gte``, ``app__id__exact``...)."""
    request = RequestFactory().get("/")
    request.user = superuser
    changelist: ChangeList = model_admin.get_changelist_instance(request)
    return [name for spec in changelist.filter_specs for name in spec.expected_parameters()]


def hostile_queries(model_admin: admin.ModelAdmin, superuser: Any) -> list[dict[str, str]]:
    """GENERIC, then BY_KIND on the first field of each kind, the list filters' parameters
    with a value no column holds, and the date hierarchy's out-of-range parts."""
    queries = list(GENERIC)
    kinds: set[str] = set()
    for field in model_admin.model._meta.concrete_fields:
        kind = _kind(field)
        if kind is not None and kind not in kinds:
            kinds.add(kind)
            queries += [{f"{field.name}__{lookup}": value} for lookup, value in BY_KIND[kind]]
    for name in _filter_parameters(model_admin, superuser):
        if not name.endswith("__isnull"):  # Django reads any value as a boolean
            queries.append({name: f"1{NUL}"})
    if model_admin.date_hierarchy:
        queries += [{f"{model_admin.date_hierarchy}__{part}": v} for part, v in DATE_HIERARCHY]
    return queries


def server_errors(client: Client, urls: list[str]) -> list[tuple[str, int]]:
    """The URLs answered with a 5xx, as the user would see them (no exception re-raised)."""
    client.raise_request_exception = False
    answers = [(url, client.get(url).status_code) for url in urls]
    return [(url, status) for url, status in answers if status >= 500]


@pytest.fixture
def superuser(django_user_model: Any) -> Any:
    # No password: hashing one costs more than the whole walk of an admin.
    return django_user_model.objects.create_superuser("root", "root@example.com", None)


@pytest.fixture
def superuser_client(client: Client, superuser: Any) -> Client:
    client.force_login(superuser)
    return client


@pytest.fixture
def rows() -> None:
    """A few rows in the main tables, so lists and pages have something to show."""
    HostAppVersionFactory()
    HostCoprocFactory()
    OutputFileFactory(result__host=HostCoprocFactory().host)
    WorkSequenceFactory()
    TeamFactory()


def _changelist(model_admin: admin.ModelAdmin) -> str:
    opts = model_admin.model._meta
    return reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist")


@pytest.mark.usefixtures("rows")
@pytest.mark.parametrize("model_admin", REGISTRY, ids=LABELS)
def test_changelist_answers_hostile_filters_without_a_server_error(superuser_client, superuser, model_admin):
    base = _changelist(model_admin)
    urls = [f"{base}?{urlencode(query)}" for query in hostile_queries(model_admin, superuser)]
    assert server_errors(superuser_client, urls) == []


@pytest.mark.usefixtures("rows")
@pytest.mark.parametrize("model_admin", REGISTRY, ids=LABELS)
def test_object_pages_answer_hostile_ids_without_a_server_error(superuser_client, model_admin):
    base = _changelist(model_admin)
    urls = [f"{base}{oid}/{view}/" for oid in IDS for view in ("change", "history", "delete")]
    assert server_errors(superuser_client, urls) == []


def _autocomplete_sources() -> list[tuple[str, models.Field]]:
    """One foreign key to each registered model whose admin can search (autocomplete targets)."""
    sources: dict[str, models.Field] = {}
    for model_admin in REGISTRY:
        for field in model_admin.model._meta.concrete_fields:
            target = field.related_model
            if (
                field.is_relation
                and target in admin.site._registry
                and admin.site._registry[target].search_fields
            ):
                sources.setdefault(target._meta.label, field)
    return sorted(sources.items())


AUTOCOMPLETE = _autocomplete_sources()


@pytest.mark.usefixtures("rows")
@pytest.mark.parametrize(("target", "field"), AUTOCOMPLETE, ids=[label for label, _ in AUTOCOMPLETE])
def test_autocomplete_answers_hostile_terms_without_a_server_error(superuser_client, target, field):
    opts = field.model._meta
    urls = [
        "/admin/autocomplete/?"
        + urlencode(
            {"app_label": opts.app_label, "model_name": opts.model_name, "field_name": field.name, **q}
        )
        for q in ({"term": NUL}, {"term": f"a{NUL}b"}, {"term": HUGE}, {"term": "x", "page": HUGE})
    ]
    assert server_errors(superuser_client, urls) == []


def test_autocomplete_term_with_a_nul_finds_nothing(superuser_client):
    ProjectFactory(slug="alpha")
    url = "/admin/autocomplete/?" + urlencode(
        {"term": f"alpha{NUL}", "app_label": "volunteers", "model_name": "account", "field_name": "project"}
    )
    response = superuser_client.get(url)
    assert response.status_code == 200
    assert response.json()["results"] == []


def test_year_past_9999_in_a_date_filter_redirects_to_the_invalid_lookup_page(superuser_client):
    response = superuser_client.get("/admin/work/result/?create_time__year=10000")
    assert response.status_code == 302
    assert response["Location"] == "/admin/work/result/?e=1"


def test_a_regex_filter_the_database_cannot_compile_redirects_to_the_invalid_lookup_page(superuser_client):
    WorkunitFactory()  # SQLite compiles the pattern only to match it against a row
    response = superuser_client.get("/admin/work/workunit/?" + urlencode({"name__regex": "("}))
    assert response.status_code == 302
    assert response["Location"] == "/admin/work/workunit/?e=1"


@pytest.mark.skipif(connection.vendor != "postgresql", reason="SQLite stores and compares a NUL")
def test_nul_in_a_text_filter_redirects_to_the_invalid_lookup_page_on_postgresql(superuser_client):
    response = superuser_client.get("/admin/work/workunit/?" + urlencode({"name__exact": f"a{NUL}b"}))
    assert response.status_code == 302
    assert response["Location"] == "/admin/work/workunit/?e=1"


def test_every_registered_admin_is_guarded():
    """Third-party admins too: the site (INSTALLED_APPS' apps.core.admin_apps.GuardedAdminConfig)
    guards whatever is registered on it."""
    unguarded = [
        label for label, ma in zip(LABELS, REGISTRY, strict=True) if not isinstance(ma, HostileInputGuard)
    ]
    assert unguarded == []


class _BrokenListAdmin(admin.ModelAdmin):
    def get_queryset(self, request: Any) -> Any:
        raise RuntimeError("database unreachable")


def test_a_list_without_parameters_still_fails_loudly(superuser):
    """The guard takes an error for a bad parameter only when the URL has some: without,
    the fault is the server's and must not hide behind the invalid-lookup page."""
    site = GuardedAdminSite(name="broken")
    site.register(Platform, _BrokenListAdmin)
    request = RequestFactory().get("/admin/projects/platform/")
    request.user = superuser
    with pytest.raises(RuntimeError, match="database unreachable"):
        site.get_model_admin(Platform).changelist_view(request)


def test_a_filtered_list_that_fails_for_a_server_reason_still_fails_loudly(superuser):
    """Only errors a bad value causes become the invalid-lookup page; a broken query or a lost
    connection behind a filtered URL is still a server error, and is seen."""
    site = GuardedAdminSite(name="broken")
    site.register(Platform, _BrokenListAdmin)
    request = RequestFactory().get("/admin/projects/platform/?name=x")
    request.user = superuser
    with pytest.raises(RuntimeError, match="database unreachable"):
        site.get_model_admin(Platform).changelist_view(request)
