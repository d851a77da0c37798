"""Monitoring endpoints: /health/ and /metrics (see apps.ops.access for who may read them)."""

from django.urls import path

from apps.ops.health import HealthView
from apps.ops.metrics import metrics_view

urlpatterns = [
    path("health/", HealthView.as_view(), name="health"),
    path("metrics", metrics_view, name="metrics"),
]
