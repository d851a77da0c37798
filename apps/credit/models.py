"""Per-app credit of users and teams, and cross-project normalization data (docs/credit.md)."""

from __future__ import annotations

from django.db import models


class AppCredit(models.Model):
    """Credit from one app: jobs, total and recent average (BOINC's credit_user/credit_team)."""

    app = models.ForeignKey("applications.App", on_delete=models.CASCADE, related_name="+")
    njobs = models.PositiveIntegerField(default=0)
    total = models.FloatField(default=0)
    expavg = models.FloatField(default=0)
    expavg_time = models.FloatField(default=0)

    class Meta:
        abstract = True


class UserAppCredit(AppCredit):
    """A user's credit from one app (BOINC's credit_user table)."""

    account = models.ForeignKey("volunteers.Account", on_delete=models.CASCADE, related_name="app_credit")

    class Meta:
        ordering = ["account_id", "app_id"]
        constraints = [models.UniqueConstraint(fields=["account", "app"], name="userappcredit_unique")]

    def __str__(self) -> str:
        return f"{self.account_id}/{self.app_id}: {self.total:.1f}"


class TeamAppCredit(AppCredit):
    """A team's credit from one app (BOINC's credit_team table)."""

    team = models.ForeignKey("volunteers.Team", on_delete=models.CASCADE, related_name="app_credit")

    class Meta:
        ordering = ["team_id", "app_id"]
        constraints = [models.UniqueConstraint(fields=["team", "app"], name="teamappcredit_unique")]

    def __str__(self) -> str:
        return f"{self.team_id}/{self.app_id}: {self.total:.1f}"


class ScaleSource(models.Model):
    """An external project's per-version export, read for cross-project normalization."""

    url = models.URLField(unique=True)
    enabled = models.BooleanField(default=True)
    last_fetch = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)

    def __str__(self) -> str:
        return self.url


class PlanClassScale(models.Model):
    """Average scale factor per plan class across projects, weighted by recent credit."""

    plan_class = models.CharField(max_length=100, unique=True)
    scale = models.FloatField()
    weight = models.FloatField(default=0, help_text="Total recent average credit behind the figure")
    n_versions = models.PositiveIntegerField(default=0)
    computed_time = models.DateTimeField()

    class Meta:
        ordering = ["plan_class"]

    def __str__(self) -> str:
        return f"{self.plan_class}: {self.scale:.4g}"


class PartialCredit(models.Model):
    """Credit already granted for a result before it was validated (partial credit by
    trickle-up messages): the validation then grants only the rest of the job's credit.

    Keyed by the result's id rather than a foreign key, as credit never depends on work.
    """

    result_id = models.BigIntegerField(unique=True)
    app = models.ForeignKey("applications.App", on_delete=models.CASCADE, related_name="+")
    credit = models.FloatField(default=0)
    runtime = models.FloatField(default=0, help_text="Seconds of runtime credited so far")
    grants = models.PositiveIntegerField(default=0)
    update_time = models.DateTimeField()

    def __str__(self) -> str:
        return f"result {self.result_id}: {self.credit:.2f}"
