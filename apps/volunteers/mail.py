"""Email to volunteers (founder requests, address changes), through Django's email backend:
the console by default, SMTP when EMAIL_HOST is set (settings)."""

from __future__ import annotations

import logging

from django.conf import settings
from django.core.mail import send_mail

logger = logging.getLogger(__name__)


def volunteer_mail_send(*, to: str, subject: str, body: str) -> bool:
    """Send one plain-text message; a failure is logged, not raised: the change it tells of
    is made already, as Django's password reset carries on when its message fails."""
    try:
        send_mail(subject, body, settings.DEFAULT_FROM_EMAIL, [to])
    except Exception:
        logger.exception("could not send %r", subject)
        return False
    return True
