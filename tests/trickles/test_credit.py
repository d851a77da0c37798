"""Partial credit by trickle (a partial job credited as a job, docs/credit.md): runtime
trickles credit a running job, capped per app; its validation grants only the rest."""

from __future__ import annotations

import pytest

from apps.core import clock
from apps.core.domain.resources import COBBLESTONE_SCALE
from apps.credit.models import PartialCredit
from apps.credit.services import CreditJob, CreditWorkunit, credit_grant
from apps.hosts.models import Host
from apps.trickles.models import HandledState, MsgFromHost, TrickleHandler
from apps.trickles.services import trickle_handle
from apps.volunteers.models import Account
from apps.work.domain.states import ValidateState
from apps.work.models import Result
from tests.trickles.conftest import trickle

pytestmark = pytest.mark.django_db


@pytest.fixture
def credit_handler(volunteer) -> TrickleHandler:
    return TrickleHandler.objects.create(app_id=volunteer.result.app_id, variety="runtime", max_runtime=3600)


def _send_runtime(volunteer, seconds: str, *, time: int = 1) -> MsgFromHost:
    volunteer.rpc(
        trickle(volunteer.result.name, variety="runtime", body=f"<runtime>{seconds}</runtime>", time=time)
    )
    message = MsgFromHost.objects.get(send_time=time)
    trickle_handle(message_id=message.id, now=clock.now())
    message.refresh_from_db()
    return message


def _expected(result: Result, seconds: float) -> float:
    return seconds * result.flops_estimate * COBBLESTONE_SCALE


def test_a_runtime_trickle_grants_that_part_of_the_credit(volunteer, credit_handler):
    message = _send_runtime(volunteer, "600")

    result = volunteer.result
    assert message.handled == HandledState.HANDLED
    assert Host.objects.get(id=volunteer.hostid).total_credit == pytest.approx(_expected(result, 600))
    assert Account.objects.get(id=volunteer.account.id).total_credit == pytest.approx(_expected(result, 600))
    assert PartialCredit.objects.get(result_id=result.id).runtime == 600


def test_the_runtime_one_trickle_claims_is_capped_per_app(volunteer, credit_handler):
    _send_runtime(volunteer, "1e9")

    assert PartialCredit.objects.get().runtime == 3600
    assert Host.objects.get(id=volunteer.hostid).total_credit == pytest.approx(
        _expected(volunteer.result, 3600)
    )


@pytest.mark.parametrize("body", ["-5", "soon", "nan"])
def test_a_trickle_without_a_positive_runtime_fails_and_grants_nothing(volunteer, credit_handler, body):
    message = _send_runtime(volunteer, body)

    assert message.handled == HandledState.FAILED
    assert "runtime" in message.error
    assert Host.objects.get(id=volunteer.hostid).total_credit == 0


def test_a_trickle_of_a_validated_task_grants_nothing(volunteer, credit_handler):
    Result.objects.filter(id=volunteer.result.id).update(validate_state=ValidateState.VALID)

    message = _send_runtime(volunteer, "600")

    assert message.handled == HandledState.FAILED
    assert not PartialCredit.objects.exists()


def _validate(result: Result, elapsed: float) -> float:
    result.refresh_from_db()
    wu = result.workunit
    job = CreditJob(
        result_id=result.id,
        host_id=result.host_id,
        account_id=result.account_id,
        app_version_id=result.app_version_id,
        anonymous_proc_type="",
        elapsed_time=elapsed,
        flops_estimate=result.flops_estimate,
        sent_time=result.sent_time.timestamp(),
        received_time=result.sent_time.timestamp() + elapsed,
    )
    work = CreditWorkunit(
        app_id=result.app_id,
        fpops_est=wu.rsc_fpops_est,
        fpops_bound=wu.rsc_fpops_bound,
        delay_bound=wu.delay_bound,
        unreplicated=True,
    )
    return credit_grant(workunit=work, jobs=[job], now=clock.now())[0].granted_credit


def test_the_validation_grants_only_the_rest_of_the_job_credit(volunteer, credit_handler):
    _send_runtime(volunteer, "600", time=1)
    _send_runtime(volunteer, "600", time=2)

    granted = _validate(volunteer.result, 1800)

    assert granted == pytest.approx(_expected(volunteer.result, 1800))
    assert Host.objects.get(id=volunteer.hostid).total_credit == pytest.approx(granted)
    assert Account.objects.get(id=volunteer.account.id).total_credit == pytest.approx(granted)


def test_a_job_without_trickles_gets_its_whole_credit_at_validation(volunteer):
    granted = _validate(volunteer.result, 1800)

    assert Host.objects.get(id=volunteer.hostid).total_credit == pytest.approx(granted)
