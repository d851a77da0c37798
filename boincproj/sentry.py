"""Error reports to Sentry (or a Sentry-compatible service), switched on by SENTRY_DSN.

Called from the settings module, as Sentry's Django guide does, so the web processes,
Celery workers, beat and management commands all report. The Django, Celery and logging
integrations are enabled automatically by the SDK: unhandled exceptions, failed tasks and
records logged at ERROR (``logger.exception`` in the scheduler, transfers and daemons)
become events. Personal data (IP addresses, cookies, account keys in request bodies) is
not sent.
"""

from __future__ import annotations

import sentry_sdk


def sentry_init(*, dsn: str, environment: str, traces_sample_rate: float) -> None:
    sentry_sdk.init(
        dsn=dsn,
        environment=environment,
        traces_sample_rate=traces_sample_rate,
        send_default_pii=False,
        max_request_body_size="never",  # scheduler requests carry the account key
    )
