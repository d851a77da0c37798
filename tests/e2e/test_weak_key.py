"""The stock client attached with an account's weak key fetches, runs and reports work."""

from __future__ import annotations

import pytest

from apps.hosts.models import Host
from apps.volunteers.services.weak_keys import account_weak_key
from apps.work.domain.states import Outcome, ServerState
from apps.work.models import Result
from tests.e2e.conftest import add_job, make_e2e_project, url_dir_name, wait_until

pytestmark = [pytest.mark.boinc_client, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_a_client_attached_with_the_weak_key_runs_and_reports_a_job(boinc_client, base_url, tmp_path):
    e2e = make_e2e_project(slug="weakkey")
    wu = add_job(e2e, "weakjob", tmp_path / "inputs")
    client = boinc_client()
    client.start("--attach_project", e2e.master_url, account_weak_key(e2e.account))
    wait_until(
        lambda: Result.objects.filter(workunit=wu, server_state=ServerState.OVER).exists(),
        timeout=45,
        what="the report of weakjob_0",
        client=client,
    )
    result = Result.objects.get(workunit=wu)
    assert result.outcome == Outcome.SUCCESS
    assert Host.objects.get(pk=result.host_id).account == e2e.account
    assert account_weak_key(e2e.account) in client.read(f"account_{url_dir_name(e2e.master_url)}.xml")
