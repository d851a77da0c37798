from datetime import date, timedelta

import pytest
from lxml import etree

from apps.credit.models import UserAppCredit
from apps.portal.charts import credit_chart_html
from apps.volunteers.models import CreditHistory
from tests.factories import AccountFactory, HostAppVersionFactory, HostFactory, ProjectFactory, TeamFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def account():
    team = TeamFactory(project=ProjectFactory(slug="vp"), name="Crunchers")
    return AccountFactory(
        project=team.project, name="Ada", team=team, total_credit=1234.5, expavg_credit=56.25
    )


def test_user_page_shows_total_and_recent_credit(client, account):
    body = client.get(f"/vp/show_user.php?userid={account.id}").content.decode()
    assert '<div class="figure" id="total-credit">1,234.50</div>' in body
    assert "56.25" in body
    assert "Crunchers" in body


def test_user_page_charts_credit_history(client, account):
    for i in range(5):
        CreditHistory.objects.create(
            project=account.project,
            account=account,
            day=date(2026, 11, 1) + timedelta(days=i),
            total_credit=100.0 * i,
        )
    body = client.get(f"/vp/show_user.php?userid={account.id}").content.decode()
    assert '<svg class="chart"' in body
    assert "from 2026-11-01 to 2026-11-05" in body


def test_user_page_breaks_credit_down_by_app(client, account):
    from tests.factories import AppFactory

    UserAppCredit.objects.create(
        account=account,
        app=AppFactory(project=account.project, user_friendly_name="Folding"),
        njobs=7,
        total=99.5,
    )
    body = client.get(f"/vp/show_user.php?userid={account.id}").content.decode()
    assert "Folding" in body
    assert "99.50" in body


def test_user_page_lists_hosts_unless_hidden(client, account):
    host = HostFactory(account=account, domain_name="ada-box")
    assert f"hostid={host.id}" in client.get(f"/vp/show_user.php?userid={account.id}").content.decode()
    account.show_hosts = False
    account.save()
    body = client.get(f"/vp/show_user.php?userid={account.id}").content.decode()
    assert f"hostid={host.id}" not in body
    assert f"hostid={host.id}" not in body


def test_user_xml_is_boincs_record_with_the_public_cpid(client, account):
    root = etree.fromstring(client.get(f"/vp/show_user.php?userid={account.id}&format=xml").content)
    assert root.tag == "user"
    assert root.findtext("total_credit") == "1234.5"
    assert root.findtext("cpid") == account.public_cpid
    assert root.findtext("cpid") != account.cross_project_id


def test_unknown_or_bad_user_id_is_404(client, account):
    assert client.get("/vp/show_user.php?userid=999999").status_code == 404
    assert client.get("/vp/show_user.php?userid=abc").status_code == 404


def test_host_page_shows_hardware_and_per_version_statistics(client, account):
    hav = HostAppVersionFactory(
        host=HostFactory(account=account, p_ncpus=16),
        error_rate=0.25,
        scale_probation=False,
        max_jobs_per_day=64,
    )
    body = client.get(f"/vp/show_host_detail.php?hostid={hav.host_id}").content.decode()
    assert "16 processors" in body
    assert str(hav.app_version) in body
    assert "25.0 %" in body
    assert "3.0 GFLOPS" in body  # p_fpops 3e9, not "3,000,000,000 FLOPS"
    assert ">64<" in body


def test_team_page_lists_members_by_recent_credit(client, account):
    AccountFactory(project=account.project, team=account.team, name="Grace", expavg_credit=99.0)
    body = client.get(f"/vp/team_display.php?teamid={account.team_id}").content.decode()
    assert body.index("Grace") < body.index("Ada")


def test_top_users_sorts_by_recent_or_total_credit(client, account):
    AccountFactory(project=account.project, name="Newcomer", total_credit=10.0, expavg_credit=500.0)
    recent = client.get("/vp/top_users.php").content.decode()
    total = client.get("/vp/top_users.php?sort_by=total").content.decode()
    assert recent.index("Newcomer") < recent.index("Ada")
    assert total.index("Ada") < total.index("Newcomer")


def test_top_hosts_paginates(client, account):
    for i in range(55):
        HostFactory(account=account, expavg_credit=float(i))
    first = client.get("/vp/top_hosts.php").content.decode()
    second = client.get("/vp/top_hosts.php?page=2").content.decode()
    assert "page 1 of 2" in first
    assert "page 2 of 2" in second


def test_top_teams_shows_member_counts(client, account):
    body = client.get("/vp/top_teams.php").content.decode()
    assert "Crunchers" in body


def test_chart_needs_two_points():
    assert credit_chart_html([(date(2026, 1, 1), 5.0)]) == ""
    assert credit_chart_html([(date(2026, 1, 1), 5.0), (date(2026, 1, 2), 7.0)]).startswith("<figure")


def test_user_json_matches_the_page(client, account):
    body = client.get(f"/api/v1/projects/vp/users/{account.id}/").json()
    assert (body["name"], body["total_credit"], body["team"]) == ("Ada", 1234.5, "Crunchers")
    assert body["cpid"] == account.public_cpid


def test_top_users_json_sorted_by_recent_credit(client, account):
    AccountFactory(project=account.project, name="Newcomer", expavg_credit=500.0)
    names = [u["name"] for u in client.get("/api/v1/projects/vp/users/").json()["results"]]
    assert names == ["Newcomer", "Ada"]


def test_host_json_hides_owner_when_asked(client, account):
    host = HostFactory(account=account)
    account.show_hosts = False
    account.save()
    assert client.get(f"/api/v1/projects/vp/hosts/{host.id}/").json()["owner"] is None
