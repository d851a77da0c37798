"""The db_dump statistics export: files, fields, consent, atomic writes, serving, the command
and the task."""

from __future__ import annotations

import gzip
import hashlib
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from lxml import etree

from apps.hosts.models import DeletedHost
from apps.portal.stats_export import DELETED_KEEP_DAYS, stats_dir, stats_export_write
from apps.portal.tasks import stats_export_task
from apps.projects.models import DaemonRun
from apps.volunteers.models import Account, DeletedAccount
from tests.factories import AccountFactory, HostFactory, ProjectFactory, TeamFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def project():
    return ProjectFactory(slug="stats")


@pytest.fixture
def people(project):
    team = TeamFactory(project=project, name="Crunchers", total_credit=300.0, expavg_credit=30.0)
    ada = AccountFactory(
        project=project,
        name="Ada",
        email_addr="ada@example.com",
        team=team,
        country="France",
        total_credit=250.5,
        expavg_credit=12.25,
        expavg_time=1.7e9,
    )
    team.founder = ada
    team.save()
    bob = AccountFactory(project=project, name="Bob", total_credit=49.5, stats_export_consent=False)
    HostFactory(account=ada, domain_name="ada-box", total_credit=200.0, p_model="Ryzen")
    HostFactory(account=bob, domain_name="bob-box", total_credit=49.5)
    return ada, bob, team


def read_gz(project, name):
    path = stats_dir(project) / name
    with gzip.open(path) as f:
        return etree.fromstring(f.read())


def test_user_file_has_the_db_dump_fields_and_the_public_cpid(project, people, now):
    ada, _, team = people
    stats_export_write(project=project, now=now)
    users = read_gz(project, "user.gz")
    assert users.tag == "users"
    (user,) = users.findall("user")
    fields = {child.tag: child.text for child in user}
    assert fields["id"] == str(ada.id)
    assert fields["name"] == "Ada"
    assert fields["country"] == "France"
    assert float(fields["total_credit"]) == 250.5
    assert float(fields["expavg_credit"]) == 12.25
    assert float(fields["expavg_time"]) == 1.7e9
    assert fields["teamid"] == str(team.id)
    assert fields["cpid"] == hashlib.md5((ada.cross_project_id + "ada@example.com").encode()).hexdigest()
    assert fields["cpid"] == ada.public_cpid
    assert str(ada.cross_project_id) not in etree.tostring(users).decode()


def test_users_without_consent_and_their_hosts_are_left_out(project, people, now):
    stats_export_write(project=project, now=now)
    assert [u.findtext("name") for u in read_gz(project, "user.gz")] == ["Ada"]
    hosts = read_gz(project, "host.gz").findall("host")
    assert [h.findtext("p_model") for h in hosts] == ["Ryzen"]
    assert hosts[0].findtext("userid") == str(people[0].id)
    assert float(hosts[0].findtext("total_credit")) == 200.0


def test_team_file_names_the_founder(project, people, now):
    stats_export_write(project=project, now=now)
    (team,) = read_gz(project, "team.gz").findall("team")
    assert (team.findtext("name"), team.findtext("founder_name")) == ("Crunchers", "Ada")
    assert float(team.findtext("total_credit")) == 300.0
    assert float(team.findtext("expavg_credit")) == 30.0


def test_tables_xml_has_the_update_time_and_totals(project, people, now):
    outcome = stats_export_write(project=project, now=now)
    tables = etree.fromstring((stats_dir(project) / "tables.xml").read_bytes())
    assert tables.tag == "tables"
    assert int(tables.findtext("update_time")) == int(now.timestamp())
    assert (tables.findtext("nusers_total"), tables.findtext("nhosts_total")) == ("1", "1")
    assert tables.findtext("nteams_total") == "1"
    assert float(tables.findtext("total_credit")) == 250.5
    assert outcome.items == 3


def test_a_deleted_user_and_their_hosts_are_listed_for_stats_sites(project, people, now):
    ada, _, _ = people
    ada_id, cpid, (host,) = ada.id, ada.public_cpid, list(ada.hosts.all())
    ada.delete()
    stats_export_write(project=project, now=now)
    users = read_gz(project, "user_deleted.gz")
    hosts = read_gz(project, "host_deleted.gz")
    assert users.tag == "users_deleted"
    assert [(u.findtext("id"), u.findtext("cpid")) for u in users] == [(str(ada_id), cpid)]
    assert hosts.tag == "hosts_deleted"
    assert [(h.findtext("id"), h.findtext("host_cpid")) for h in hosts] == [(str(host.id), host.host_cpid)]
    assert read_gz(project, "user.gz").findall("user") == []


def test_a_deleted_host_alone_is_listed(project, people, now):
    ada, _, _ = people
    host = ada.hosts.get()
    host_id = host.id
    host.delete()
    stats_export_write(project=project, now=now)
    assert [h.findtext("id") for h in read_gz(project, "host_deleted.gz")] == [str(host_id)]
    assert len(read_gz(project, "user_deleted.gz")) == 0


def test_users_who_never_consented_are_not_listed_when_deleted(project, people, now):
    _, bob, _ = people
    bob.delete()
    stats_export_write(project=project, now=now)
    assert len(read_gz(project, "user_deleted.gz")) == 0
    assert len(read_gz(project, "host_deleted.gz")) == 0


def test_tables_xml_counts_the_deleted(project, people, now):
    people[0].delete()
    stats_export_write(project=project, now=now)
    tables = etree.fromstring((stats_dir(project) / "tables.xml").read_bytes())
    assert (tables.findtext("nusers_deleted_total"), tables.findtext("nhosts_deleted_total")) == ("1", "1")


def test_deletions_are_forgotten_after_the_keep_period(project, people):
    people[0].delete()
    deleted_at = DeletedAccount.objects.get().create_time
    stats_export_write(project=project, now=deleted_at + timedelta(days=DELETED_KEEP_DAYS - 1))
    assert len(read_gz(project, "user_deleted.gz")) == 1
    stats_export_write(project=project, now=deleted_at + timedelta(days=DELETED_KEEP_DAYS, seconds=1))
    assert len(read_gz(project, "user_deleted.gz")) == 0
    assert (DeletedAccount.objects.count(), DeletedHost.objects.count()) == (0, 0)


def test_deleting_a_project_leaves_no_deletion_records(project, people):
    project.delete()
    assert (DeletedAccount.objects.count(), DeletedHost.objects.count()) == (0, 0)


def test_files_replace_the_old_ones_and_leave_no_temporary_files(project, people, now):
    stats_export_write(project=project, now=now)
    Account.objects.filter(name="Bob").update(stats_export_consent=True)
    stats_export_write(project=project, now=now)
    assert len(read_gz(project, "user.gz")) == 2
    assert sorted(p.name for p in stats_dir(project).iterdir()) == [
        "badge_team.gz",
        "badge_user.gz",
        "host.gz",
        "host_deleted.gz",
        "tables.xml",
        "team.gz",
        "user.gz",
        "user_deleted.gz",
    ]


def test_a_failed_write_keeps_the_previous_file(project, people, now, monkeypatch):
    stats_export_write(project=project, now=now)
    before = (stats_dir(project) / "user.gz").read_bytes()

    def broken(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr("apps.portal.stats_export.user_export_record", broken)
    with pytest.raises(RuntimeError):
        stats_export_write(project=project, now=now)
    assert (stats_dir(project) / "user.gz").read_bytes() == before
    assert not [p for p in stats_dir(project).iterdir() if p.name.startswith(".")]


@pytest.mark.slow
def test_ten_thousand_users_are_read_in_chunks(project, now, django_assert_max_num_queries):
    Account.objects.bulk_create(
        Account(project=project, name=f"u{i}", email_addr=f"u{i}@example.com", authenticator=f"a{i}")
        for i in range(10_500)
    )
    # 11 chunks of users, one each of hosts, teams, deleted users and deleted hosts, two
    # deletes of expired records (plus savepoint noise).
    with django_assert_max_num_queries(20):
        outcome = stats_export_write(project=project, now=now, batch=1000)
    assert outcome.message.startswith("10500 users")
    assert len(read_gz(project, "user.gz")) == 10_500


def test_export_off_writes_nothing(project, people, now):
    project.stats_export = False
    project.save()
    assert stats_export_write(project=project, now=now).message == "stats export is off for this project"
    assert not stats_dir(project).exists()


def test_files_are_served_under_the_master_url(client, project, people, now):
    stats_export_write(project=project, now=now)
    response = client.get("/stats/stats/user.gz")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/gzip"
    assert "Content-Encoding" not in response
    body = b"".join(response.streaming_content)
    assert etree.fromstring(gzip.decompress(body)).findtext("user/name") == "Ada"
    tables = client.get("/stats/stats/tables.xml")
    assert tables["Content-Type"].startswith("text/xml")


@pytest.mark.parametrize("name", ["secret.txt", "..", ".user.gz.x.tmp", "user.gz%2F..%2F..%2Fsecret"])
def test_only_the_export_files_are_served(client, project, people, now, name):
    stats_export_write(project=project, now=now)
    (project.data_dir / "secret.txt").write_text("no")
    (stats_dir(project) / "secret.txt").write_text("no")
    assert client.get(f"/stats/stats/{name}").status_code == 404


def test_serving_is_read_only_and_needs_an_export(client, project, people, now):
    assert client.get("/stats/stats/user.gz").status_code == 404
    stats_export_write(project=project, now=now)
    assert client.post("/stats/stats/user.gz").status_code == 405
    project.stats_export = False
    project.save()
    assert client.get("/stats/stats/user.gz").status_code == 404


def test_project_home_links_the_files_once_exported(client, project, people, now):
    stats_export_write(project=project, now=now)
    body = client.get("/stats/").content.decode()
    assert "Statistics export" in body
    for name in ("tables.xml", "user.gz", "host.gz", "team.gz", "user_deleted.gz", "host_deleted.gz"):
        assert f'href="/stats/stats/{name}"' in body
    assert 'href="/stats/app_version_scales.xml"' in body
    assert 'href="/api/v1/projects/stats/app_version_scales/"' in body


def test_project_home_links_no_file_before_the_first_export(client, project):
    body = client.get("/stats/").content.decode()
    assert 'href="/stats/stats/' not in body
    assert "once it has run for the first time" in body


def test_command_writes_one_project_and_records_a_run(project, people, capsys):
    call_command("db_dump", "--project", "stats")
    assert "stats: 1 users, 1 hosts, 1 teams" in capsys.readouterr().out
    assert (stats_dir(project) / "user.gz").exists()
    assert DaemonRun.objects.get(project=project, daemon="db_dump").items == 3


def test_command_refuses_an_unknown_project():
    with pytest.raises(CommandError, match="no project"):
        call_command("db_dump", "--project", "nope")


def test_task_exports_every_project_that_has_not_paused_db_dump(project, people):
    paused = ProjectFactory(slug="paused", paused_daemons=["db_dump"])
    assert stats_export_task() == {"items": 3, "errors": 0}
    assert (stats_dir(project) / "tables.xml").exists()
    assert not stats_dir(paused).exists()
    assert DaemonRun.objects.filter(daemon="db_dump").count() == 1


def test_admins_see_deleted_users_and_hosts_but_cannot_edit_them(admin_client, project, people):
    ada, _, _ = people
    ada_id, host_id = ada.id, ada.hosts.get().id
    ada.delete()
    users = admin_client.get("/admin/volunteers/deletedaccount/")
    hosts = admin_client.get("/admin/hosts/deletedhost/")
    assert ada.public_cpid in users.content.decode()
    assert f">{host_id}<" in hosts.content.decode()
    assert admin_client.get("/admin/volunteers/deletedaccount/add/").status_code == 403
    record = DeletedAccount.objects.get(userid=ada_id)
    assert admin_client.post(f"/admin/volunteers/deletedaccount/{record.pk}/change/", {}).status_code == 403
