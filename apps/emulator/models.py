"""Stored emulator scenarios and their runs, for the admin page."""

from __future__ import annotations

from django.db import models


class Scenario(models.Model):
    """A client-emulator scenario (YAML) an admin keeps next to a project."""

    project = models.ForeignKey(
        "projects.Project", null=True, blank=True, on_delete=models.CASCADE, related_name="scenarios"
    )
    name = models.CharField(max_length=200)
    text = models.TextField(help_text="Scenario in YAML or JSON")
    create_time = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class EmulationRun(models.Model):
    """One run of a scenario under a policy, with the figures and chart it produced."""

    scenario = models.ForeignKey(Scenario, on_delete=models.CASCADE, related_name="runs")
    policy = models.CharField(max_length=20)
    create_time = models.DateTimeField(auto_now_add=True)
    figures = models.JSONField(default=dict)
    table = models.TextField(blank=True)
    chart_svg = models.TextField(blank=True)

    class Meta:
        ordering = ["-create_time"]

    def __str__(self) -> str:
        return f"{self.scenario} / {self.policy}"
