from django.urls import path

from apps.scheduler.api.views import SchedulerJsonView

urlpatterns = [
    path("projects/<slug:slug>/scheduler/", SchedulerJsonView.as_view(), name="scheduler-json"),
]
