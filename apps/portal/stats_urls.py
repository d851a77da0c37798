"""Public exports under each project's master URL: db_dump statistics and the
app-version scale export of cross-project normalization."""

from django.urls import path

from apps.credit.views import app_version_scales_xml
from apps.portal.stats_views import stats_file

app_name = "stats_export"

urlpatterns = [
    path("<slug:slug>/stats/<str:name>", stats_file, name="file"),
    path("<slug:slug>/app_version_scales.xml", app_version_scales_xml, name="app_version_scales"),
]
