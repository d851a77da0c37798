"""The built-in trickle handler: partial credit by runtime (BOINC's trickle_credit).

A trickle carrying ``<runtime>SECONDS</runtime>`` (the runtime since the task's previous
trickle) earns that stretch's credit as CreditNew measures a job, the runtime capped at the
handler's ``max_runtime``; the result's validation later grants only the rest of its credit.
"""

from __future__ import annotations

import logging

from apps.core import clock
from apps.credit.services.partial import PartialJob, credit_grant_partial
from apps.protocol import trickle_number
from apps.trickles.models import MsgFromHost, TrickleHandler
from apps.trickles.services import TrickleRefused
from apps.work.domain.states import ValidateState

logger = logging.getLogger(__name__)


def runtime_credit_handler(message: MsgFromHost, config: TrickleHandler) -> None:
    """Grant the credit of the runtime the message reports to its task's host and user."""
    runtime = trickle_number(message.xml, "runtime")
    if runtime is None or runtime <= 0:
        raise TrickleRefused("no positive <runtime> in the message")
    result = message.result
    if result is None or result.host_id != message.host_id:
        raise TrickleRefused("the message's task is no longer this host's")
    if result.validate_state != ValidateState.INIT:
        raise TrickleRefused("the task's credit was granted when it was validated")
    if config.max_runtime > 0 and runtime > config.max_runtime:
        logger.info("trickle %s: runtime %.0f s capped at %.0f s", message.pk, runtime, config.max_runtime)
        runtime = config.max_runtime
    credit_grant_partial(
        app=result.app,
        job=PartialJob(
            result_id=result.pk,
            host_id=message.host_id,
            account_id=result.account_id,
            app_version_id=result.app_version_id,
            flops_estimate=result.flops_estimate,
        ),
        runtime=runtime,
        now=clock.now(),
    )
