"""A volunteer's "use at most N % of the CPUs" limits the CPUs the scheduler counts.

BOINC's get_job_limits: effective_ncpus = p_ncpus × max_ncpus_pct (rounded down, at least
1, under the project's max_ncpus). It scales the jobs per RPC and in progress, and sizes
multi-thread versions; the daily quota still counts the reported CPUs. The preferences are
those handle_global_prefs picks: the client's working ones, else the newer of the request's
and the account's, else the account's.
"""

from dataclasses import replace

import pytest

from apps.protocol import GlobalPrefs
from tests.scheduler.conftest import make_jobs, make_request, rpc

pytestmark = pytest.mark.django_db

QUARTER = GlobalPrefs(raw="<max_ncpus_pct>25</max_ncpus_pct>")


def sixteen_cpus(account, **kw):
    """A request for plenty of CPU work from a 16-CPU host (with disk for hundreds of jobs)."""
    kw = {"cpu_req_secs": 1e6, "work_req_seconds": 1e6, **kw}
    req = make_request(account.authenticator, **kw)
    return replace(req, host_info=replace(req.host_info, p_ncpus=16, d_total=1e13, d_free=1e13))


def stored_prefs(account, body: str) -> None:
    account.global_prefs = body
    account.save(update_fields=["global_prefs"])


@pytest.fixture
def one_per_cpu(project, cpu_app):
    """max_jobs_per_rpc = CPUs × 1, and work for all of them."""
    project.max_wus_to_send = 1
    project.save()
    make_jobs(project, cpu_app, 40)
    return project


def test_a_quarter_of_16_cpus_gets_the_jobs_per_rpc_of_4(client, one_per_cpu, account):
    reply = rpc(client, one_per_cpu, sixteen_cpus(account, working_global_prefs=QUARTER))
    assert len(reply.results) == 4


def test_without_preferences_all_16_cpus_count(client, one_per_cpu, account):
    reply = rpc(client, one_per_cpu, sixteen_cpus(account))
    assert len(reply.results) == 16


def test_a_quarter_of_16_cpus_gets_the_jobs_in_progress_of_4(client, project, account, cpu_app):
    project.max_wus_in_progress = 2
    project.save()
    make_jobs(project, cpu_app, 100)
    first = rpc(client, project, sixteen_cpus(account, working_global_prefs=QUARTER))
    second = rpc(
        client, project, sixteen_cpus(account, working_global_prefs=QUARTER, hostid=first.hostid, rpc_seqno=1)
    )
    assert (len(first.results), len(second.results)) == (8, 0)  # 2 per CPU × 4 CPUs


def test_a_multi_thread_version_is_sized_for_a_quarter_of_16_cpus(client, project, account, mt_app):
    reply = rpc(client, project, sixteen_cpus(account, working_global_prefs=QUARTER))
    assert [v.avg_ncpus for v in reply.app_versions] == [4]


def test_a_multi_thread_version_uses_all_16_cpus_without_preferences(client, project, account, mt_app):
    reply = rpc(client, project, sixteen_cpus(account))
    assert [v.avg_ncpus for v in reply.app_versions] == [16]


def test_the_daily_quota_still_counts_every_reported_cpu(client, project, account, cpu_app):
    project.daily_result_quota = 2  # a day: 2 per reported CPU = 32 (not 8 for 4 CPUs)
    project.save()
    make_jobs(project, cpu_app, 100)
    reply = rpc(client, project, sixteen_cpus(account, working_global_prefs=QUARTER))
    assert len(reply.results) == 32


def test_the_accounts_preferences_count_when_the_request_carries_none(client, one_per_cpu, account):
    stored_prefs(account, "<mod_time>200</mod_time><max_ncpus_pct>25</max_ncpus_pct>")
    reply = rpc(client, one_per_cpu, sixteen_cpus(account))
    assert len(reply.results) == 4


def test_the_clients_working_preferences_win_over_the_accounts(client, one_per_cpu, account):
    stored_prefs(account, "<mod_time>200</mod_time><max_ncpus_pct>25</max_ncpus_pct>")
    everything = GlobalPrefs(raw="<max_ncpus_pct>100</max_ncpus_pct>")
    reply = rpc(client, one_per_cpu, sixteen_cpus(account, working_global_prefs=everything))
    assert len(reply.results) == 16


def test_the_accounts_newer_preferences_win_over_the_requests_older_ones(client, one_per_cpu, account):
    stored_prefs(account, "<mod_time>200</mod_time><max_ncpus_pct>25</max_ncpus_pct>")
    older = GlobalPrefs(raw="<mod_time>100</mod_time><max_ncpus_pct>100</max_ncpus_pct>")
    reply = rpc(client, one_per_cpu, sixteen_cpus(account, global_prefs=older))
    assert len(reply.results) == 4


def test_the_requests_newer_preferences_win_over_the_accounts_older_ones(client, one_per_cpu, account):
    stored_prefs(account, "<mod_time>200</mod_time><max_ncpus_pct>100</max_ncpus_pct>")
    newer = GlobalPrefs(raw="<mod_time>300</mod_time><max_ncpus_pct>25</max_ncpus_pct>")
    reply = rpc(client, one_per_cpu, sixteen_cpus(account, global_prefs=newer))
    assert len(reply.results) == 4


def test_stored_preferences_that_are_not_xml_are_not_used(client, one_per_cpu, account):
    stored_prefs(account, "<max_ncpus_pct>25</max_ncpus_pct")
    reply = rpc(client, one_per_cpu, sixteen_cpus(account))
    assert len(reply.results) == 16


def test_zero_percent_means_all_cpus(client, one_per_cpu, account):
    zero = GlobalPrefs(raw="<max_ncpus_pct>0</max_ncpus_pct>")
    reply = rpc(client, one_per_cpu, sixteen_cpus(account, working_global_prefs=zero))
    assert len(reply.results) == 16


def test_the_accounts_preferences_of_the_hosts_venue_count(client, one_per_cpu, account):
    from apps.hosts.models import Host
    from apps.protocol.global_prefs import ComputingPrefs, GlobalPrefsDoc, render_global_prefs

    doc = GlobalPrefsDoc(mod_time=200).with_venue("work", ComputingPrefs(max_ncpus_pct=25))
    stored_prefs(account, render_global_prefs(doc))
    first = rpc(client, one_per_cpu, sixteen_cpus(account))
    Host.objects.filter(pk=first.hostid).update(venue="work")
    second = rpc(client, one_per_cpu, sixteen_cpus(account, hostid=first.hostid, rpc_seqno=1))
    assert (len(first.results), len(second.results)) == (16, 4)
