"""A volunteer's journey in a browser, on a phone and on a desktop: sign up, attach a
computer (a simulated 7.20 client making real scheduler RPCs and uploads over HTTP), see
the task pending and then granted once the daemons ran, join a team and quit it, set
computing preferences for everywhere and for work (which the computer then receives), edit
the account, change the password and reset it from the email. Every page is looked at 1366
and 390 pixels wide: it must not scroll sideways, and a screenshot of it is kept
(var/test-artifacts/browser/)."""

from __future__ import annotations

import re
from io import StringIO
from pathlib import Path

import pytest
from django.core import mail
from django.core.management import call_command
from playwright.sync_api import expect

from apps.applications.services import AppFileSpec, app_create, app_version_add
from apps.benchmarks.lean import LeanHost
from apps.emulator.live.rpc import HostHardware
from apps.emulator.live.wire import HttpSession, UploadGate
from apps.projects.models import Project
from apps.projects.services import project_create
from apps.protocol.global_prefs import parse_global_prefs
from apps.volunteers.models import Account, Team
from apps.work.services import JobSpec, workunits_create
from tests.factories import AccountFactory, TeamFactory

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

PLATFORM = "x86_64-pc-linux-gnu"
PASSWORD = "a long secret"
CHANGED_PASSWORD = "a changed long secret"


@pytest.fixture
def project(live_server, tmp_path: Path) -> Project:
    """A project served by the live server, with a signed CPU app and one job of 1,000 s."""
    project = project_create(slug="journey", name="Journey Project").project
    project.base_url = live_server.url
    project.save()
    worker = tmp_path / "worker.sh"
    worker.write_text("#!/bin/sh\necho 0 > boinc_finish_called\n")
    app_create(project=project, name="sim", user_friendly_name="Simulation")
    app_version_add(
        project=project,
        app_name="sim",
        version_num=100,
        platform_name=PLATFORM,
        files=[AppFileSpec(path=worker)],
    )
    workunits_create(
        project=project,
        app=project.apps.get(),
        jobs=[JobSpec(name="job1", rsc_fpops_est=1e12, rsc_fpops_bound=1e14)],
    )
    founder = AccountFactory(project=project, name="Linus")
    team = TeamFactory(project=project, name="Crunchers", founder=founder)
    Account.objects.filter(pk=founder.pk).update(team=team)
    return project


def computer(project: Project, authenticator: str) -> LeanHost:
    """A simulated BOINC 7.20 client on a 4-CPU computer, attached with the account key."""
    return LeanHost(
        index=0,
        hardware=HostHardware(ncpus=4, cpu_flops=1e9),
        master_url=project.master_url,
        authenticator=authenticator,
        session=HttpSession(timeout=30),
        gate=UploadGate(True),
    )


def run_daemons() -> None:
    call_command("run_daemons", "--once", stdout=StringIO(), stderr=StringIO())


def log_in(page, email: str, password: str) -> None:
    page.fill("#id_email", email)
    page.fill("#id_password", password)
    page.click("button:has-text('Log in')")


def task_row(page):
    return page.locator("table.tasks tbody tr").first


def test_volunteer_journey(live_server, project, page, look_phone_last):
    look = look_phone_last
    base = f"{live_server.url}/journey"

    # Sign up from the project's home page; the header then greets the volunteer.
    page.goto(f"{base}/")
    look(page, "home")
    page.click("#nav-join")
    look(page, "signup")
    page.fill("#id_name", "Ada")
    page.fill("#id_email", "ada@example.org")
    page.fill("#id_password", PASSWORD)
    page.click("text=Create account")
    expect(page.locator("#nav-account")).to_have_text("Ada")
    expect(page.locator("#nav-join")).to_have_count(0)
    look(page, "account")
    key = page.locator("#account-key").inner_text()

    # Attach: the computer's first RPC gets a host id and the job.
    host = computer(project, key)
    first = host.rpc()
    assert first is not None
    assert host.stats.errors == []
    assert [r.name for r in first.results] == ["job1_0"]
    page.click("#nav-tasks")
    expect(task_row(page).locator("td.status")).to_have_text("In progress")
    look(page, "tasks-in-progress")

    # The job runs and is reported: completed, waiting for validation, credit pending.
    host.advance(2000)
    assert host.rpc() is not None
    assert host.stats.errors == []
    page.reload()
    expect(task_row(page).locator("td.status")).to_have_text("Completed, waiting for validation")
    expect(task_row(page).locator("td.credit")).to_have_text("pending")
    assert float(page.locator("#pending-credit").inner_text().replace(",", "")) > 0
    look(page, "tasks-pending")

    # The daemons validate it: granted, on the task list, the account and the client's reply.
    run_daemons()
    page.reload()
    expect(task_row(page).locator("td.status")).to_have_text("Completed and validated")
    credit = task_row(page).locator("td.credit").inner_text()
    assert float(credit.replace(",", "")) > 0
    expect(page.locator("#pending-credit")).to_have_text("0.00")
    expect(page.locator("#granted-credit")).to_have_text(credit)
    look(page, "tasks-granted")
    page.click("text=Valid (1)")
    expect(page.locator("table.tasks tbody tr")).to_have_count(1)
    task_row(page).locator("td").first.locator("a").click()
    expect(page.locator("#task-status")).to_have_text("Completed and validated")
    look(page, "task")
    page.click("table.details a[href*='workunit.php']")
    expect(page.locator("h1")).to_contain_text("Work unit")
    look(page, "workunit")
    reply = host.rpc()
    assert reply is not None
    assert f"{reply.user_total_credit:.2f}" == credit

    # The computer's page, and its tasks.
    page.goto(f"{base}/account/")
    page.click("th:has-text('Public page') + td a")
    look(page, "user")
    page.locator("a[href*='show_host_detail.php']").first.click()
    expect(page.locator("#cpu-speed")).to_have_text("1.0 GFLOPS")
    look(page, "computer")
    page.click("#host-tasks")
    expect(task_row(page).locator("td.status")).to_have_text("Completed and validated")
    expect(page.locator("#granted-credit")).to_have_text(credit)
    look(page, "computer-tasks")

    # Join a team from the teams list.
    page.click("header >> text=Teams")
    look(page, "teams")
    page.click("text=Crunchers")
    page.click("#join-team")
    look(page, "team-join")
    page.click("button:has-text('Join Crunchers')")
    expect(page.locator("ul.messages")).to_contain_text("You joined Crunchers")
    look(page, "team")
    assert Account.objects.get(email_addr="ada@example.org").team.name == "Crunchers"
    page.click("text=Ask for foundership")
    look(page, "founder-request")
    page.click("button:has-text('Ask for foundership')")
    expect(page.locator("ul.messages")).to_contain_text("The founder is told")
    assert mail.outbox[-1].to == [Account.objects.get(name="Linus").email_addr]
    page.goto(f"{base}/team_quit.php")
    look(page, "team-quit")
    page.click("button:has-text('Quit Crunchers')")
    expect(page.locator("ul.messages")).to_contain_text("You left Crunchers")
    expect(page.locator("table.stack tbody")).not_to_contain_text("Ada")
    expect(page.locator("#join-team")).to_be_visible()
    page.goto(f"{base}/top_teams.php")
    page.click("#create-team")
    look(page, "team-create")
    page.fill("#id_name", "Night owls")
    page.click("button:has-text('Create team')")
    expect(page.locator("ul.messages")).to_contain_text("You founded Night owls")
    page.click("text=Edit the team")
    look(page, "team-edit")
    page.goto(page.url.replace("team_edit.php", "team_display.php"))
    page.click("#change-founder")
    look(page, "team-change-founder")
    page.goto(f"{base}/top_users.php")
    look(page, "top-users")
    page.goto(f"{base}/top_hosts.php")
    look(page, "top-computers")

    # Computing preferences: half the CPUs, and a work location of its own; the computer
    # receives them at its next request.
    page.click("header >> text=Preferences")
    look(page, "prefs")
    page.click("#edit-primary")
    look(page, "prefs-edit")
    page.fill("#id_max_ncpus_pct", "50")
    page.click("button:has-text('Save preferences')")
    expect(page.locator("ul.messages")).to_contain_text("Your preferences are saved")
    expect(page.locator("#prefs-primary")).to_contain_text("50 % of the CPUs")
    page.click("#add-work")
    expect(page.locator("h1")).to_have_text("Add preferences for work")
    look(page, "prefs-edit-work")
    page.fill("#id_cpu_usage_limit", "40")
    page.click("button:has-text('Add preferences')")
    expect(page.locator("#prefs-work")).to_contain_text("40 % of CPU time")
    page.select_option("select[aria-label^='Location of computer']", "work")
    page.click("form.inline button:has-text('Set')")
    expect(page.locator("ul.messages")).to_contain_text("is at work")
    look(page, "prefs-saved")
    sent = host.rpc()
    assert sent is not None
    assert sent.host_venue == "work"
    prefs = parse_global_prefs(sent.global_preferences)
    assert (prefs.primary.max_ncpus_pct, prefs.for_venue("work").cpu_usage_limit) == (50, 40)
    page.goto(f"{base}/account/prefs/")
    look(page, "project-prefs")

    # Account: name, email (the client logs in with the new address), password.
    page.goto(f"{base}/account/")
    page.click("#edit-info")
    look(page, "edit-info")
    page.fill("#id_name", "Ada Lovelace")
    page.fill("#id_country", "United Kingdom")
    page.click("button:has-text('Save')")
    expect(page.locator("#nav-account")).to_have_text("Ada Lovelace")
    page.click("#edit-email")
    look(page, "edit-email")
    page.fill("#id_email", "ada@lovelace.example")
    page.fill("#id_password", PASSWORD)
    page.click("button:has-text('Change address')")
    expect(page.locator("#account-email")).to_have_text("ada@lovelace.example")
    page.click("#edit-passwd")
    look(page, "edit-password")
    page.fill("#id_old_password", PASSWORD)
    page.fill("#id_new_password1", CHANGED_PASSWORD)
    page.fill("#id_new_password2", CHANGED_PASSWORD)
    page.click("button:has-text('Change password')")
    expect(page.locator("ul.messages")).to_contain_text("Your password is changed")

    # Log out: the old password no longer opens the account, the new one does.
    page.click("button:has-text('Log out')")
    look(page, "login")
    log_in(page, "ada@lovelace.example", PASSWORD)
    expect(page.locator("ul.errorlist")).to_have_text("Wrong email or password.")
    log_in(page, "ada@lovelace.example", CHANGED_PASSWORD)
    expect(page.locator("#nav-account")).to_have_text("Ada Lovelace")

    # Log out, forget the password, reset it from the email, log in with the new one.
    page.click("button:has-text('Log out')")
    page.click("#forgot-password")
    look(page, "password-reset")
    mail.outbox.clear()
    page.fill("#id_email", "ada@lovelace.example")
    page.click("button:has-text('Send the link')")
    expect(page.locator("#reset-sent")).to_be_visible()
    look(page, "password-reset-sent")
    [message] = mail.outbox
    link = re.search(r"https?://\S+/reset_passwd/\S+/", message.body).group(0)
    page.goto(link)
    look(page, "password-reset-form")
    page.fill("#id_new_password1", "another long secret")
    page.fill("#id_new_password2", "another long secret")
    page.click("button:has-text('Set the password')")
    expect(page.locator("#reset-complete")).to_be_visible()
    look(page, "password-reset-done")
    page.click("#reset-complete a")
    log_in(page, "ada@lovelace.example", "another long secret")
    expect(page.locator("#nav-account")).to_have_text("Ada Lovelace")

    # The project's status, linked from every page.
    page.click("footer >> text=server status")
    look(page, "server-status")
    assert Team.objects.get(name="Night owls").founder.name == "Ada Lovelace"
