"""Fair share between submitters, measured on the tasks simulated hosts receive from the
scheduler: two submitters with equal quotas share the hosts about equally while both have
work, whatever the sizes of their batches."""

from __future__ import annotations

import pytest

from apps.work.models import Result
from tests.submit.client import InputFile, Job, SubmitClient, md5_name
from tests.submit.conftest import make_account
from tests.submit.hosts import SimHosts

pytestmark = pytest.mark.django_db


def _submit(client, project, account, tmp_path, n: int, prefix: str) -> None:
    sub = SubmitClient(client, project.slug, account.authenticator)
    path = tmp_path / f"{prefix}.in"
    path.write_bytes(prefix.encode())
    name = md5_name(path.read_bytes())
    assert sub.upload_files([path], [name]) == {"success": None}
    reply = sub.submit_batch("cpuapp", [Job(name=f"{prefix}{i}", files=[InputFile(name)]) for i in range(n)])
    assert "batch_id" in reply, reply


def _owners(names: list[str]) -> list[str]:
    batch_of = dict(Result.objects.filter(name__in=names).values_list("name", "workunit__name"))
    return ["alice" if batch_of[n].startswith("big") else "bob" for n in names]


@pytest.fixture
def hosts(client, project):
    return SimHosts(client, project, [make_account(project, f"host{i}") for i in range(4)], ask_seconds=8000)


def _first_sent(hosts: SimHosts, count: int) -> list[str]:
    while sum(len(h.received) for h in hosts.hosts) < count:
        assert hosts.step() > 0, "the hosts got no work"
    sent = sorted(
        Result.objects.filter(name__in=[n for h in hosts.hosts for n in h.received]).values_list(
            "sent_time", "id", "name"
        )
    )
    return [name for _t, _id, name in sent][:count]


def test_a_large_and_a_small_batch_share_the_hosts_equally(client, project, app, alice, bob, hosts, tmp_path):
    _submit(client, project, alice, tmp_path, 1000, "big")
    _submit(client, project, bob, tmp_path, 100, "small")
    owners = _owners(_first_sent(hosts, 160))
    assert 70 <= owners.count("bob") <= 90, owners.count("bob")


def test_a_small_batch_submitted_later_is_not_starved(client, project, app, alice, bob, hosts, tmp_path):
    _submit(client, project, alice, tmp_path, 1000, "big")
    _first_sent(hosts, 40)
    _submit(client, project, bob, tmp_path, 100, "small")
    before = {n for h in hosts.hosts for n in h.received}
    later = [n for n in _first_sent(hosts, 40 + 200) if n not in before]
    assert _owners(later[:200]).count("bob") == 100
