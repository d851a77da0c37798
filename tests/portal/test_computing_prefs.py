"""Computing preferences: set on the web with venues, sent to the client in the scheduler
reply (mod_time newer than its copy), taken from a client that has newer ones."""

from __future__ import annotations

import pytest
from lxml import html

from apps.projects.services import project_create
from apps.protocol import GlobalPrefs
from apps.protocol.global_prefs import parse_global_prefs
from apps.volunteers.models import Account
from tests.factories import AccountFactory, HostFactory
from tests.portal.volunteer_helpers import PASSWORD, log_in
from tests.scheduler.conftest import make_request, rpc

pytestmark = pytest.mark.django_db


@pytest.fixture
def ada(db):
    project = project_create(slug="cp", name="Prefs Project").project
    return AccountFactory(project=project, password=PASSWORD, email_addr="ada@example.com")


def form_data(client, url: str) -> dict[str, str]:
    """The edit form's fields as a browser would submit them unchanged."""
    doc = html.fromstring(client.get(url).content)
    form = doc.xpath("//form[contains(@class, 'prefs-form')]")[0]
    return {k: v for k, v in form.form_values() if k != "csrfmiddlewaretoken"}


def stored(account: Account):
    return parse_global_prefs(Account.objects.get(pk=account.pk).global_prefs)


def test_the_form_shows_boincs_defaults_and_saving_them_stores_them(client, ada):
    log_in(client, ada)
    data = form_data(client, "/cp/prefs_edit.php?subset=global")
    assert data["max_ncpus_pct"] == "100"
    assert data["work_buf_min_days"] == "0.1"
    assert "run_if_user_active" not in data  # "Suspend all computing" is unticked
    client.post("/cp/prefs_edit.php?subset=global", data)
    prefs = stored(ada)
    assert prefs.primary.run_if_user_active is True
    assert prefs.primary.disk_min_free_gb == 1.0


def test_a_saved_cpu_share_and_rate_limit_reach_the_client(client, ada, now):
    log_in(client, ada)
    data = {
        **form_data(client, "/cp/prefs_edit.php?subset=global"),
        "max_ncpus_pct": "50",
        "max_bytes_sec_down": "100",
    }
    client.post("/cp/prefs_edit.php?subset=global", data)
    older = GlobalPrefs(raw="<mod_time>100</mod_time><max_ncpus_pct>100</max_ncpus_pct>", mod_time=100)
    reply = rpc(client, ada.project, make_request(ada.authenticator, global_prefs=older))
    sent = parse_global_prefs(reply.global_preferences)
    assert (sent.primary.max_ncpus_pct, sent.primary.max_bytes_sec_down) == (50, 100 * 1024)
    assert sent.mod_time > 100


def test_a_venue_is_added_with_its_own_values_and_the_hosts_location_picks_it(client, ada):
    host = HostFactory(account=ada)
    log_in(client, ada)
    data = {**form_data(client, "/cp/prefs_edit.php?subset=global&venue=work"), "cpu_usage_limit": "40"}
    client.post("/cp/prefs_edit.php?subset=global&venue=work", data)
    client.post("/cp/host_venue_action.php", {"hostid": host.id, "venue": "work"})
    prefs = stored(ada)
    assert (prefs.for_venue("work").cpu_usage_limit, prefs.primary.cpu_usage_limit) == (40, 100)
    host.refresh_from_db()
    assert host.venue == "work"


def test_removing_a_venue_keeps_the_primary_set(client, ada):
    log_in(client, ada)
    data = form_data(client, "/cp/prefs_edit.php?subset=global&venue=home")
    client.post("/cp/prefs_edit.php?subset=global&venue=home", data)
    client.post("/cp/prefs_remove.php", {"venue": "home"})
    assert stored(ada).venues == ()


def test_out_of_range_values_are_refused_and_nothing_is_stored(client, ada):
    log_in(client, ada)
    data = {**form_data(client, "/cp/prefs_edit.php?subset=global"), "max_ncpus_pct": "150"}
    body = client.post("/cp/prefs_edit.php?subset=global", data).content.decode()
    assert 'id="prefs-errors"' in body
    assert Account.objects.get(pk=ada.pk).global_prefs == ""


def test_one_of_two_hours_is_refused(client, ada):
    log_in(client, ada)
    data = {**form_data(client, "/cp/prefs_edit.php?subset=global"), "start_hour": "22"}
    assert "Choose both hours" in client.post("/cp/prefs_edit.php?subset=global", data).content.decode()


def test_newer_preferences_from_the_client_show_on_the_page(client, ada):
    newer = GlobalPrefs(raw="<mod_time>4000000000</mod_time><max_ncpus_pct>25</max_ncpus_pct>", mod_time=4e9)
    request = make_request(
        ada.authenticator, global_prefs=newer, global_prefs_source_email_hash=ada.email_hash
    )
    rpc(client, ada.project, request)
    log_in(client, ada)
    page = html.fromstring(client.get("/cp/prefs.php").content)
    text = page.get_element_by_id("prefs-primary").text_content()
    assert "25 % of the CPUs" in text


def test_a_computer_of_another_account_cannot_be_moved(client, ada):
    other = HostFactory(account=AccountFactory(project=ada.project))
    log_in(client, ada)
    assert client.post("/cp/host_venue_action.php", {"hostid": other.id, "venue": "work"}).status_code == 404


def test_an_unknown_venue_is_404(client, ada):
    log_in(client, ada)
    assert client.get("/cp/prefs_edit.php?subset=global&venue=garage").status_code == 404


def test_project_preferences_are_a_link_away(client, ada):
    log_in(client, ada)
    assert client.get("/cp/prefs.php?subset=project")["Location"] == "/cp/account/prefs/"
