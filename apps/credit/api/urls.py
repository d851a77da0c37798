from django.urls import path

from apps.credit.api.views import AppVersionScalesView

urlpatterns = [
    path(
        "projects/<slug:slug>/app_version_scales/",
        AppVersionScalesView.as_view(),
        name="app-version-scales",
    ),
]
