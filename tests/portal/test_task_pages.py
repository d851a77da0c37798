"""results.php, result.php and workunit.php: BOINC's task lists and pages."""

from __future__ import annotations

from datetime import timedelta

import pytest
from lxml import html

from apps.core.domain.resources import COBBLESTONE_SCALE
from apps.work.domain.states import ClientState, Outcome, ServerState, ValidateState
from apps.work.models import Result
from tests.factories import (
    AccountFactory,
    AppFactory,
    HostFactory,
    ProjectFactory,
    ResultFactory,
    WorkunitFactory,
)
from tests.portal.volunteer_helpers import PASSWORD, log_in

pytestmark = pytest.mark.django_db


@pytest.fixture
def owner(now):
    project = ProjectFactory(slug="tp")
    account = AccountFactory(project=project, password=PASSWORD, total_credit=40.0)
    host = HostFactory(account=account)
    app = AppFactory(project=project)

    def task(**kw):
        fpops = kw.pop("fpops", 1e12)
        wu = WorkunitFactory(app=app, rsc_fpops_est=fpops, rsc_fpops_bound=fpops * 10)
        return ResultFactory(
            workunit=wu, host=host, account=account, sent_time=now - timedelta(hours=2), **kw
        )

    task(server_state=ServerState.IN_PROGRESS, report_deadline=now + timedelta(days=3))
    task(
        server_state=ServerState.OVER,
        outcome=Outcome.SUCCESS,
        validate_state=ValidateState.INIT,
        fpops=4.32e14,
    )
    task(
        server_state=ServerState.OVER,
        outcome=Outcome.SUCCESS,
        validate_state=ValidateState.VALID,
        granted_credit=40.0,
    )
    task(server_state=ServerState.OVER, outcome=Outcome.CLIENT_ERROR, client_state=ClientState.COMPUTE_ERROR)
    return account


def page(client, url):
    response = client.get(url)
    assert response.status_code == 200, response.status_code
    return html.fromstring(response.content)


def statuses(doc) -> list[str]:
    return [td.text_content().strip() for td in doc.xpath('//td[contains(@class, "status")]')]


def test_a_computers_tasks_are_public_with_boincs_status_words(client, owner):
    host = owner.hosts.get()
    doc = page(client, f"/tp/results.php?hostid={host.id}")
    assert sorted(statuses(doc)) == [
        "Completed and validated",
        "Completed, waiting for validation",
        "Error while computing",
        "In progress",
    ]


def test_the_state_filter_shows_only_tasks_waiting_for_validation(client, owner):
    doc = page(client, f"/tp/results.php?hostid={owner.hosts.get().id}&state=2")
    assert statuses(doc) == ["Completed, waiting for validation"]
    assert [td.text_content() for td in doc.xpath('//td[contains(@class, "credit")]')] == ["pending"]


def test_the_filters_count_each_state(client, owner):
    doc = page(client, f"/tp/results.php?hostid={owner.hosts.get().id}")
    text = doc.get_element_by_id("task-filters").text_content()
    assert "All (4)" in text
    assert "In progress (1)" in text
    assert "Valid (1)" in text
    assert "Error (1)" in text


def test_pending_credit_is_the_jobs_estimate_and_granted_is_the_total(client, owner):
    doc = page(client, f"/tp/results.php?hostid={owner.hosts.get().id}")
    pending = float(doc.get_element_by_id("pending-credit").text_content().replace(",", ""))
    assert pending == pytest.approx(4.32e14 * COBBLESTONE_SCALE, abs=0.01)  # 1 GFLOPS-day = 200
    assert doc.get_element_by_id("granted-credit").text_content() == "0.00"  # the host's own total


def test_an_accounts_tasks_are_shown_to_its_owner(client, owner):
    log_in(client, owner)
    doc = page(client, f"/tp/results.php?userid={owner.id}")
    assert len(statuses(doc)) == 4
    assert doc.get_element_by_id("granted-credit").text_content() == "40.00"


def test_an_accounts_tasks_are_private_to_others(client, owner):
    other = AccountFactory(project=owner.project, password=PASSWORD)
    assert client.get(f"/tp/results.php?userid={owner.id}").status_code == 403
    log_in(client, other)
    assert client.get(f"/tp/results.php?userid={owner.id}").status_code == 403


@pytest.mark.parametrize(
    "query", ["", "?hostid=abc", "?hostid=99999999", "?hostid=1e3", "?userid=" + "9" * 30]
)
def test_bad_task_list_parameters_are_404(client, owner, query):
    assert client.get(f"/tp/results.php{query}").status_code == 404


def test_a_task_page_shows_its_status_and_links_its_workunit(client, owner):
    task = owner.results.get(validate_state=ValidateState.VALID)
    doc = page(client, f"/tp/result.php?resultid={task.id}")
    assert doc.get_element_by_id("task-status").text_content() == "Completed and validated"
    assert doc.get_element_by_id("task-credit").text_content() == "40.00"
    assert doc.xpath(f'//a[@href="/tp/workunit.php?wuid={task.workunit_id}"]')


def test_a_task_page_by_name(client, owner):
    task = owner.results.first()
    assert task.name in client.get(f"/tp/result.php?result_name={task.name}").content.decode()


def test_a_workunit_page_lists_its_tasks(client, owner):
    task = owner.results.get(validate_state=ValidateState.VALID)
    doc = page(client, f"/tp/workunit.php?wuid={task.workunit_id}")
    assert statuses(doc) == ["Completed and validated"]


def test_tasks_of_another_projects_workunit_are_404(client, owner):
    wu = WorkunitFactory()
    assert client.get(f"/tp/workunit.php?wuid={wu.id}").status_code == 404


def test_show_names_lists_tasks_and_workunits_by_name(client, owner):
    doc = page(client, f"/tp/results.php?hostid={owner.hosts.get().id}&state=2&show_names=1")
    [task] = doc.xpath('//td[@data-label="Task"]/a')
    [workunit] = doc.xpath('//td[@data-label="Work unit"]/a')
    result = Result.objects.get(account=owner, validate_state=ValidateState.INIT, outcome=Outcome.SUCCESS)
    assert (task.text_content(), workunit.text_content()) == (result.name, result.workunit.name)


def test_show_names_is_kept_by_the_filter_links(client, owner):
    doc = page(client, f"/tp/results.php?hostid={owner.hosts.get().id}&show_names=1")
    assert all("show_names=1" in href for href in doc.xpath('//p[@id="task-filters"]/a/@href'))


def test_pending_php_sends_the_owner_to_their_tasks_awaiting_validation(client, owner):
    log_in(client, owner)
    response = client.get("/tp/pending.php")
    assert response["Location"] == f"/tp/results.php?userid={owner.id}&state=2"
