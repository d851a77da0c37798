"""The project preferences page (prefs.php?subset=project): resource share, processor types,
app selection, the apps' declared settings, and a set per location."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from lxml import html

from apps.applications.models import App
from apps.projects.services import project_create
from apps.scheduler.services.prefs import account_project_prefs_get
from apps.volunteers.models import Account
from tests.factories import AccountFactory, AppFactory
from tests.portal.volunteer_helpers import PASSWORD, log_in

pytestmark = pytest.mark.django_db

URL = "/pp/account/prefs/"


@pytest.fixture
def ada(db):
    project = project_create(slug="pp", name="Prefs Project").project
    return AccountFactory(project=project, password=PASSWORD, email_addr="ada@example.com")


@pytest.fixture
def logged_in(client, ada):
    log_in(client, ada)
    return client


def form_data(client, url: str = URL) -> dict[str, object]:
    """The form's fields as a browser would submit them unchanged."""
    form = html.fromstring(client.get(url).content).xpath("//form[contains(@class, 'stacked')]")[0]
    data: dict[str, object] = {}
    for key, value in form.form_values():
        if key == "csrfmiddlewaretoken":
            continue
        data.setdefault(key, [])
        data[key].append(value)
    return data


def prefs(account: Account):
    return account_project_prefs_get(Account.objects.get(pk=account.pk))


def test_the_form_starts_at_a_resource_share_of_100(logged_in):
    assert form_data(logged_in)["resource_share"] == ["100"]


def test_a_resource_share_is_saved_in_the_project_preferences(logged_in, ada):
    logged_in.post(URL, {**form_data(logged_in), "resource_share": "250"})
    assert prefs(ada).primary.resource_share == 250
    assert "<resource_share>250</resource_share>" in Account.objects.get(pk=ada.pk).project_prefs


@pytest.mark.parametrize(
    ("share", "error"),
    [
        ("-1", "greater than or equal to 0"),
        ("10000000", "less than or equal to 9999999"),
        ("lots", "Enter a number"),
        ("inf", "Enter a number"),
        ("", "This field is required"),
    ],
)
def test_a_resource_share_out_of_bounds_is_refused_and_nothing_saved(logged_in, ada, share, error):
    response = logged_in.post(URL, {**form_data(logged_in), "resource_share": share})
    assert response.status_code == 200
    assert error in response.content.decode()
    assert Account.objects.get(pk=ada.pk).project_prefs == ""


def test_a_location_gets_its_own_resource_share_and_the_primary_keeps_its_own(logged_in, ada):
    logged_in.post(URL, {**form_data(logged_in), "resource_share": "250"})
    data = form_data(logged_in, URL + "?venue=home")
    assert data["resource_share"] == ["250"]  # a new location's set starts from the primary
    logged_in.post(URL + "?venue=home", {**data, "resource_share": "40"})
    doc = prefs(ada)
    assert (doc.primary.resource_share, doc.for_venue("home").resource_share) == (250, 40)
    assert doc.for_venue("work").resource_share == 250


def test_a_locations_set_is_removed(logged_in, ada):
    logged_in.post(URL + "?venue=work", {**form_data(logged_in, URL + "?venue=work"), "resource_share": "5"})
    response = logged_in.post(URL, {"venue": "work", "remove": "1"}, follow=True)
    assert "computers there use the primary ones" in response.content.decode()
    assert prefs(ada).venue("work") is None


def test_an_unknown_location_is_not_found(logged_in):
    assert logged_in.get(URL + "?venue=moon").status_code == 404


def test_the_location_page_does_not_ask_the_privacy_choices(logged_in):
    fields = form_data(logged_in, URL + "?venue=school")
    assert "show_hosts" not in fields


def test_a_project_with_one_app_asks_no_app_selection(logged_in, ada):
    AppFactory(project=ada.project, name="only")
    assert "apps_selected" not in logged_in.get(URL).content.decode()


def test_the_app_selection_is_saved(logged_in, ada):
    first = AppFactory(project=ada.project, name="first")
    second = AppFactory(project=ada.project, name="second")
    data = form_data(logged_in)
    logged_in.post(URL, {**data, "apps_selected": [str(second.id)], "allow_non_preferred_apps": "on"})
    primary = prefs(ada).primary
    assert (primary.apps_selected, primary.allow_non_preferred_apps) == ((second.id,), True)
    assert first.id not in primary.apps_selected


def test_an_apps_declared_setting_is_asked_and_sent_in_project_specific(logged_in, ada):
    AppFactory(project=ada.project, name="viz", prefs_fields="color_scheme: Colour scheme of the graphics")
    page = logged_in.get(URL).content.decode()
    assert "Colour scheme of the graphics" in page
    logged_in.post(URL, {**form_data(logged_in), "specific_color_scheme": "Tahiti Sunset"})
    stored = Account.objects.get(pk=ada.pk).project_prefs
    assert "<project_specific>\n    <color_scheme>Tahiti Sunset</color_scheme>\n</project_specific>" in stored


def test_a_declared_setting_with_control_characters_is_refused(logged_in, ada):
    AppFactory(project=ada.project, name="viz", prefs_fields="color_scheme: Colour")
    response = logged_in.post(URL, {**form_data(logged_in), "specific_color_scheme": "a\x01b"})
    assert "Use printable characters only." in response.content.decode()


@pytest.mark.parametrize(
    ("declared", "problem"),
    [
        ("color scheme: Colour", "is not a name"),
        ("colour", "write it as name: label"),
        ("app_id: Apps", "is BOINC's own"),
        ("a: One\na: Two", "declared twice"),
    ],
)
def test_an_app_refuses_declared_settings_that_are_not_fields(ada, declared, problem):
    app = App(project=ada.project, name="viz", prefs_fields=declared)
    with pytest.raises(ValidationError, match=problem):
        app.clean()
