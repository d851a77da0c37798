"""The demo project's figures agree with each other, as a real project's do: its credit is
granted by the validator, so per-app credit, teams, recent averages, the credit history and
the host page all follow from the same grants."""

from __future__ import annotations

import gzip

import pytest
from django.db.models import Sum
from lxml import etree, html

from apps.core import clock
from apps.credit.models import UserAppCredit
from apps.hosts.models import Host
from apps.portal.stats_export import stats_dir, stats_export_write
from apps.volunteers.models import Account, CreditHistory, Team

pytestmark = pytest.mark.django_db


def with_credit(model, demo):
    rows = list(model.objects.filter(project=demo, total_credit__gt=0))
    assert rows, f"the demo has no {model.__name__} with credit"
    return rows


def figure(text: str) -> float:
    return float(text.replace(",", ""))


def test_each_users_total_is_the_sum_of_their_credit_by_application(demo):
    for account in with_credit(Account, demo):
        per_app = UserAppCredit.objects.filter(account=account).aggregate(total=Sum("total"))["total"]
        assert per_app == pytest.approx(account.total_credit), account.name


def test_user_page_shows_the_credit_by_application(client, demo):
    for account in with_credit(Account, demo):
        page = client.get(f"/demo/show_user.php?userid={account.id}").content.decode()
        assert "No credit granted yet" not in page, account.name


def test_team_total_is_the_sum_of_its_members(demo):
    [team] = with_credit(Team, demo)
    assert team.total_credit == pytest.approx(sum(a.total_credit for a in team.members.all()))


def test_team_recent_average_is_the_sum_of_its_members(demo):
    [team] = with_credit(Team, demo)
    members = sum(a.expavg_credit for a in team.members.all())
    assert team.expavg_credit == pytest.approx(members, rel=1e-9)


def test_each_users_recent_average_is_the_sum_of_their_credit_by_application(demo):
    for account in with_credit(Account, demo):
        per_app = UserAppCredit.objects.filter(account=account).aggregate(avg=Sum("expavg"))["avg"]
        assert per_app == pytest.approx(account.expavg_credit, rel=1e-9), account.name


def test_each_users_recent_average_is_the_sum_of_their_computers(demo):
    for account in with_credit(Account, demo):
        hosts = sum(h.expavg_credit for h in account.hosts.all())
        assert account.expavg_credit == pytest.approx(hosts, rel=1e-9), account.name


def test_every_user_team_and_host_with_credit_has_a_recent_average_time(demo):
    rows = [*with_credit(Account, demo), *with_credit(Team, demo), *with_credit(Host, demo)]
    assert [str(r) for r in rows if r.expavg_time <= 0] == []


def test_stats_export_gives_the_team_its_recent_average_time(demo):
    stats_export_write(project=demo, now=clock.now())
    teams = etree.fromstring(gzip.decompress((stats_dir(demo) / "team.gz").read_bytes()))
    [team] = teams.findall("team")
    assert float(team.findtext("expavg_time")) > 0


def test_credit_history_ends_at_each_users_total(demo):
    for account in with_credit(Account, demo):
        last = CreditHistory.objects.filter(account=account).latest("day")
        assert last.total_credit == pytest.approx(account.total_credit), account.name


def test_host_page_credit_per_job_times_jobs_makes_the_hosts_total(client, demo):
    for host in with_credit(Host, demo):
        page = html.fromstring(client.get(f"/demo/show_host_detail.php?hostid={host.id}").content)
        total = figure(page.get_element_by_id("total-credit").text_content())
        [table] = page.xpath("//h2[.='Application versions on this computer']/following-sibling::table[1]")
        headers = [th.text_content() for th in table.xpath(".//thead//th")]
        rows = [
            dict(zip(headers, (td.text_content() for td in tr.xpath("td")), strict=True))
            for tr in table.xpath(".//tbody/tr")
        ]
        granted = sum(
            int(r["Valid jobs"]) * figure(r["Avg credit/job"]) for r in rows if r["Valid jobs"] != "0"
        )
        # Each average is shown to two decimals.
        assert granted == pytest.approx(total, rel=0.01), host.domain_name
