"""Admin search and lists on the tables of millions of rows: each reads an index, never
the whole table (a substring search or a date hierarchy would, on every page)."""

from __future__ import annotations

from datetime import date, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.hosts.models import Host
from apps.projects.models import DaemonRun
from apps.volunteers.models import Account, CreditHistory
from tests.factories import (
    AccountFactory,
    HostAppVersionFactory,
    HostFactory,
    OutputFileFactory,
    ResultFactory,
    WorkunitFactory,
)

pytestmark = pytest.mark.django_db


def listed(admin_client, url: str) -> str:
    response = admin_client.get(url)
    assert response.status_code == 200
    return response.content.decode()


def test_result_search_finds_a_result_by_its_exact_name(admin_client):
    ResultFactory(name="wu_7_0")
    ResultFactory(name="wu_70_0")
    body = listed(admin_client, "/admin/work/result/?q=wu_7_0")
    assert ">wu_7_0<" in body
    assert ">wu_70_0<" not in body


def test_result_search_finds_the_results_of_a_workunit_by_its_name(admin_client):
    first = ResultFactory(workunit__name="job42", name="job42_0")
    ResultFactory(workunit=first.workunit, name="job42_1")
    ResultFactory(name="other_0")
    body = listed(admin_client, "/admin/work/result/?q=job42")
    assert ">job42_0<" in body
    assert ">job42_1<" in body
    assert ">other_0<" not in body


def test_result_search_finds_the_results_of_a_host_by_its_id(admin_client):
    host = HostFactory()
    ResultFactory(name="on_host", host=host)
    ResultFactory(name="elsewhere")
    body = listed(admin_client, f"/admin/work/result/?q={host.pk}")
    assert ">on_host<" in body
    assert ">elsewhere<" not in body


@pytest.mark.parametrize("term", ["no such name", "99999999999999999999999999", "-1", "%", "²", "①"])
def test_result_search_for_nothing_known_lists_nothing(admin_client, term):
    ResultFactory(name="wu_1_0")
    assert ">wu_1_0<" not in listed(admin_client, f"/admin/work/result/?q={term}")


def test_workunit_search_finds_a_batch_by_its_number(admin_client):
    WorkunitFactory(name="in_batch", batch=777)
    WorkunitFactory(name="not_in_batch", batch=1)
    body = listed(admin_client, "/admin/work/workunit/?q=777")
    assert ">in_batch<" in body
    assert ">not_in_batch<" not in body


def test_workunit_search_by_a_number_past_the_batch_column_lists_nothing(admin_client):
    WorkunitFactory(name="wu")
    assert ">wu<" not in listed(admin_client, "/admin/work/workunit/?q=99999999999")


def test_output_file_search_finds_a_file_by_its_exact_name(admin_client):
    OutputFileFactory(name="wu_3_0_r0")
    OutputFileFactory(name="wu_3_0_r01")
    body = listed(admin_client, "/admin/work/outputfile/?q=wu_3_0_r0")
    assert ">wu_3_0_r0<" in body
    assert ">wu_3_0_r01<" not in body


def test_host_app_version_search_finds_a_hosts_records_by_its_id(admin_client):
    wanted = HostAppVersionFactory(host__domain_name="wanted")
    HostAppVersionFactory(host__domain_name="other")
    body = listed(admin_client, f"/admin/hosts/hostappversion/?q={wanted.host_id}")
    assert f"host {wanted.host_id} " in body
    assert "(other)" not in body


def table_reads(admin_client, url: str, table: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        assert admin_client.get(url).status_code == 200
    return sum(f'FROM "{table}"' in q["sql"] for q in captured.captured_queries)


@pytest.mark.parametrize(
    ("url", "table"),
    [
        ("/admin/work/result/", "work_result"),
        ("/admin/work/workunit/", "work_workunit"),
        ("/admin/volunteers/credithistory/", "volunteers_credithistory"),
    ],
)
def test_big_table_list_reads_its_table_only_for_the_page_and_its_count(admin_client, url, table):
    ResultFactory()
    account = AccountFactory()
    CreditHistory.objects.create(project=account.project, account=account, day=date(2026, 1, 1))
    assert table_reads(admin_client, url, table) == 2


@pytest.mark.parametrize(
    "url",
    [
        "/admin/work/result/",
        "/admin/work/workunit/",
        "/admin/volunteers/credithistory/",
        "/admin/projects/daemonrun/",
    ],
)
def test_big_table_list_offers_a_date_filter(admin_client, url):
    DaemonRun.objects.create(daemon="validator", started=timezone.now())
    assert "Past 7 days" in listed(admin_client, url)


def test_credit_history_lists_the_newest_rows_first(admin_client):
    account = AccountFactory(name="ada")
    for i in range(3):
        CreditHistory.objects.create(
            project=account.project, account=account, day=date(2026, 1, 1) + timedelta(days=i)
        )
    body = listed(admin_client, "/admin/volunteers/credithistory/")
    assert body.index("Jan. 3, 2026") < body.index("Jan. 2, 2026") < body.index("Jan. 1, 2026")


@pytest.mark.parametrize(
    ("url", "table"),
    [
        ("/admin/work/result/?q=wu_1", "work_result"),
        ("/admin/work/result/?q=12", "work_result"),
        ("/admin/work/workunit/?q=wu_1", "work_workunit"),
        ("/admin/work/outputfile/?q=wu_1_r0", "work_outputfile"),
        ("/admin/hosts/hostappversion/?q=12", "hosts_hostappversion"),
    ],
)
def test_big_table_search_compares_columns_as_stored(admin_client, url, table):
    """No substring match and no column turned to text: either reads every row."""
    HostAppVersionFactory()
    OutputFileFactory()
    with CaptureQueriesContext(connection) as captured:
        assert admin_client.get(url).status_code == 200
    searches = [q["sql"] for q in captured.captured_queries if f'FROM "{table}"' in q["sql"]]
    assert searches
    for sql in searches:
        assert not any(word in sql for word in ("LIKE", "UPPER(", "::text", "CAST(")), sql


def test_host_search_finds_a_host_by_its_id(admin_client):
    wanted = HostFactory(domain_name="wanted")
    HostFactory(domain_name="other")
    body = listed(admin_client, f"/admin/hosts/host/?q={wanted.pk}")
    assert ">wanted<" in body
    assert ">other<" not in body


def test_host_search_finds_hosts_by_the_start_of_their_name_in_any_case(admin_client):
    HostFactory(domain_name="Crunch-01")
    HostFactory(domain_name="laptop")
    body = listed(admin_client, "/admin/hosts/host/?q=crunch")
    assert ">Crunch-01<" in body
    assert ">laptop<" not in body


def test_host_search_no_longer_matches_the_middle_of_a_name(admin_client):
    HostFactory(domain_name="my-crunch-box")
    assert ">my-crunch-box<" not in listed(admin_client, "/admin/hosts/host/?q=crunch")


def test_account_search_finds_an_account_by_its_exact_address_in_any_case(admin_client):
    AccountFactory(name="alice", email_addr="alice@example.org")
    AccountFactory(name="malice", email_addr="malice@example.org")
    body = listed(admin_client, "/admin/volunteers/account/?q=ALICE@Example.org")
    assert ">alice<" in body
    assert ">malice<" not in body


def test_account_search_finds_accounts_by_the_start_of_their_name(admin_client):
    AccountFactory(name="Bob Smith")
    AccountFactory(name="Jim Bob")
    body = listed(admin_client, "/admin/volunteers/account/?q=bob")
    assert ">Bob Smith<" in body
    assert ">Jim Bob<" not in body


def test_account_search_finds_an_account_by_its_id(admin_client):
    wanted = AccountFactory(name="wanted")
    AccountFactory(name="other")
    body = listed(admin_client, f"/admin/volunteers/account/?q={wanted.pk}")
    assert ">wanted<" in body
    assert ">other<" not in body


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's plans")
@pytest.mark.parametrize(
    ("url", "index"),
    [
        ("/admin/hosts/host/?q=crunch", "host_name_prefix"),
        ("/admin/volunteers/account/?q=bob", "account_name_prefix"),
        ("/admin/volunteers/account/?q=Bob@Example.org", "account_email_upper"),
    ],
)
def test_name_and_address_searches_read_an_index(admin_client, url, index):
    host = HostFactory(domain_name="crunch")
    AccountFactory(name="bob", email_addr="bob@example.org")
    # Enough other rows, with fresh statistics, that the plan is the one a large table gets
    # rather than whichever a two-row table with stale statistics happens to tie on.
    Account.objects.bulk_create(
        Account(project=host.project, name=f"volunteer{i}", email_addr=f"v{i}@example.org")
        for i in range(2000)
    )
    others = list(Account.objects.filter(name__startswith="volunteer").values_list("pk", flat=True))
    Host.objects.bulk_create(
        Host(project=host.project, account_id=pk, domain_name=f"node{pk}") for pk in others
    )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE hosts_host, volunteers_account")
    with CaptureQueriesContext(connection) as captured:
        listed(admin_client, url)
    (search,) = [q["sql"] for q in captured.captured_queries if "LIKE" in q["sql"] or "UPPER" in q["sql"]][
        -1:
    ]
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute(f"EXPLAIN {search}")
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert index in plan
