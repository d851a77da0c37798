"""Trickle messages: what running tasks send the project between RPCs (BOINC's msg_from_host),
what the project sends them back (msg_to_host), and the handlers that act on the former."""

from __future__ import annotations

from django.db import models


class HandledState(models.IntegerChoices):
    UNHANDLED = 0, "unhandled"
    HANDLED = 1, "handled"
    FAILED = 2, "failed"


class MsgFromHost(models.Model):
    """A trickle-up, stored once however often the client sends it again.

    A stock client names each trickle by its task and the second it was written
    (``send_time``) and re-sends it with every RPC until a reply carries ``<message_ack/>``;
    ``digest`` (MD5 of the body) tells two different trickles of the same second apart.
    """

    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="+")
    host = models.ForeignKey("hosts.Host", on_delete=models.CASCADE, related_name="trickles_up")
    result = models.ForeignKey(
        "work.Result", null=True, blank=True, on_delete=models.SET_NULL, related_name="trickles_up"
    )
    result_name = models.CharField(max_length=254)
    variety = models.CharField(max_length=254, blank=True)
    xml = models.TextField(blank=True, help_text="The message's XML content, variety included")
    send_time = models.BigIntegerField(
        default=0, help_text="When the task wrote it (Unix time, client clock)"
    )
    digest = models.CharField(max_length=32)
    create_time = models.DateTimeField()
    handled = models.PositiveSmallIntegerField(choices=HandledState.choices, default=HandledState.UNHANDLED)
    handled_time = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True, help_text="Why the last attempt to handle it failed")

    class Meta:
        verbose_name = "trickle-up message"
        constraints = [
            models.UniqueConstraint(
                fields=["host", "result_name", "send_time", "digest"], name="msgfromhost_once"
            )
        ]
        indexes = [models.Index(fields=["project", "handled", "variety"], name="msgfromhost_handled")]

    def __str__(self) -> str:
        return f"{self.variety or '?'} from host {self.host_id} ({self.result_name})"


class MsgToHost(models.Model):
    """A trickle-down: sent in the host's next scheduler reply, to the task ``result_name``
    names (the client hands it to that task if it is running, else drops it)."""

    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="+")
    host = models.ForeignKey("hosts.Host", on_delete=models.CASCADE, related_name="trickles_down")
    result_name = models.CharField(max_length=254, blank=True)
    variety = models.CharField(max_length=254)
    xml = models.TextField(help_text="The message's XML content")
    create_time = models.DateTimeField()
    delivered = models.BooleanField(default=False)
    delivered_time = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "trickle-down message"
        indexes = [models.Index(fields=["host", "delivered"], name="msgtohost_pending")]

    def __str__(self) -> str:
        return f"{self.variety} to host {self.host_id}"


class TrickleHandler(models.Model):
    """Which function handles an app's trickles of one variety (BOINC's trickle_handler
    daemon, one per variety). ``handler`` is a dotted path to ``f(message, config)``.

    ``max_runtime`` caps the runtime one trickle may claim (BOINC's --max_runtime), used by
    the partial-credit handler; set it to the interval at which the app sends trickles.
    """

    app = models.ForeignKey("applications.App", on_delete=models.CASCADE, related_name="trickle_handlers")
    variety = models.CharField(max_length=254)
    handler = models.CharField(max_length=254, default="apps.trickles.credit.runtime_credit_handler")
    max_runtime = models.FloatField(default=3600.0, help_text="Seconds; the most one trickle can claim")
    enabled = models.BooleanField(default=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["app", "variety"], name="tricklehandler_unique")]

    def __str__(self) -> str:
        return f"{self.variety} → {self.handler}"
