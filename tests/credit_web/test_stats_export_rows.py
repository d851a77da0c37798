"""The statistics export reads rows as tuples and renders them without a document per
record; its files hold the bytes of the model-based records rendered as one document."""

from __future__ import annotations

import gzip
from datetime import timedelta

import pytest

from apps.hosts.models import Host
from apps.portal.records import host_record, team_record, user_record
from apps.portal.stats_export import stats_dir, stats_export_write
from apps.protocol.stats_xml import render_dump
from apps.volunteers.models import Account, Team
from tests.factories import AccountFactory, HostFactory, ProjectFactory, TeamFactory

pytestmark = pytest.mark.django_db

NAMES = ['Ada <&> "Lovelace"', "Zoë ünïcödé 😀", "plain", "  spaced  ", "x" * 150, "a\tb\nc"]


@pytest.fixture
def project(now):
    project = ProjectFactory(slug="rows")
    founderless = TeamFactory(project=project, name="No <founder>", url="", description="")
    for i, name in enumerate(NAMES):
        team = TeamFactory(
            project=project,
            name=f"{name} team",
            total_credit=i * 1234.5678901,
            expavg_credit=1e-7 * i,
            expavg_time=1.7e9 + i / 3,
            url=f"https://example.com/?a={i}&b=<{i}>",
            description=name,
            country="Côte d'Ivoire",
            type=i % 8,
        )
        account = AccountFactory(
            project=project,
            name=name,
            email_addr=f"User{i}@Example.com",
            team=team if i % 3 else founderless,
            country=["", "France", "Japan"][i % 3],
            url=["", "https://a.example/", "b&c"][i % 3],
            total_credit=float(i) * 99.999999,
            expavg_credit=1e-300 if i == 4 else i / 7,
            expavg_time=1.7e9 + i,
            show_hosts=bool(i % 2),
            create_time=now - timedelta(days=i),
        )
        team.founder = account if i % 2 else None
        team.save()
        for j in range(i % 3 + 1):
            HostFactory(
                account=account,
                p_vendor=name,
                p_model=f"model {j} & co",
                os_name=["Linux", "Microsoft Windows", ""][j],
                os_version="10.0 <build>",
                total_credit=1e12 + i + j / 9,
                expavg_credit=-0.5 * j,
                rpc_time=None if j == 1 else now - timedelta(hours=j),
                timezone=3600 * j,
                p_ncpus=i + j,
                host_cpid=f"{i}{j}" * 8,
            )
    AccountFactory(project=project, name="No consent", stats_export_consent=False)
    return project


def read_gz(project, name: str) -> bytes:
    with gzip.open(stats_dir(project) / name) as f:
        return f.read()


@pytest.mark.parametrize("batch", [2, 1000])
def test_files_hold_the_model_records_bytes(project, now, batch):
    stats_export_write(project=project, now=now, batch=batch)
    users = Account.objects.filter(project=project, stats_export_consent=True).order_by("id")
    hosts = Host.objects.filter(project=project, account__stats_export_consent=True).order_by("id")
    teams = Team.objects.filter(project=project).order_by("id")
    assert read_gz(project, "user.gz") == render_dump("users", [user_record(u) for u in users])
    assert read_gz(project, "host.gz") == render_dump("hosts", [host_record(h, export=True) for h in hosts])
    assert read_gz(project, "team.gz") == render_dump("teams", [team_record(t) for t in teams])
