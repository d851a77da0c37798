"""A rotated code-signing key reaches an attached client, which then runs newly signed apps."""

from __future__ import annotations

import time

import pytest

from apps.projects.models import Project
from apps.scheduler.management.commands.rotate_code_sign_key import code_sign_key_rotate
from apps.work.domain.states import Outcome, ServerState
from apps.work.models import Result
from tests.e2e.conftest import add_job, make_e2e_project, wait_until

pytestmark = [pytest.mark.boinc_client, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def _key_in_state(state: str) -> str:
    return state.split("<code_sign_key>", 1)[1].split("</code_sign_key>", 1)[0].strip()


def test_client_accepts_a_rotated_key_and_runs_apps_signed_with_it(boinc_client, base_url, tmp_path):
    started = time.monotonic()
    e2e = make_e2e_project(slug="rotate")
    first_wu = add_job(e2e, "before", tmp_path / "inputs")
    client = boinc_client()
    client.start("--attach_project", e2e.master_url, e2e.account.authenticator, fetch_minimal_work=False)
    # Once job 1 runs, the client holds the first key and an app file verified with it.
    wait_until(lambda: "Starting task before_0" in client.log(), timeout=30, what="job 1", client=client)
    old_key = e2e.project.code_sign_public_key.strip()
    assert _key_in_state(client.read("client_state.xml")) == old_key

    rotation = code_sign_key_rotate(project_id=e2e.project.pk)
    assert rotation.resigned_files == 1
    e2e.project = Project.objects.get(pk=e2e.project.pk)
    second_wu = add_job(e2e, "after", tmp_path / "inputs")
    client.update(e2e.master_url)  # the request holds the old key: reply has the new key + signature

    wait_until(
        lambda: Result.objects.filter(workunit=second_wu, server_state=ServerState.OVER).exists(),
        timeout=30,
        what="job 2 under the new key",
        client=client,
    )
    assert Result.objects.get(workunit=first_wu).outcome == Outcome.SUCCESS
    assert Result.objects.get(workunit=second_wu).outcome == Outcome.SUCCESS
    assert _key_in_state(client.read("client_state.xml")) == rotation.public_text.strip()
    log = client.log()
    assert "doesn't validate" not in log
    assert "Missing code sign key signature" not in log
    assert "Signature verification" not in log
    assert time.monotonic() - started < 60
