from django.contrib import admin
from django.urls import include, path, re_path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from apps.core.api import api_not_found

urlpatterns = [
    path("", include("apps.ops.urls")),  # /health/ and /metrics, before the project pages' /<slug>/
    # Admin links to work sequences under the work app (bookmarks, old messages) still lead to them.
    re_path(
        r"^admin/work/worksequence/(?P<rest>.*)$",
        RedirectView.as_view(url="/admin/sequences/worksequence/%(rest)s", permanent=True, query_string=True),
    ),
    path("admin/", admin.site.urls),
    # A fixed version: drf-spectacular would otherwise put ?version= into a response header.
    path("api/schema/", SpectacularAPIView.as_view(api_version="v1"), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
    path("api/v1/", include("apps.scheduler.api.urls")),
    path("api/v1/", include("apps.work.api.urls")),
    path("api/v1/", include("apps.sequences.api.urls")),
    path("api/v1/", include("apps.portal.api.urls")),
    path("api/v1/", include("apps.credit.api.urls")),
    path("api/v1/", include("apps.trickles.api.urls")),
    path("api/v1/", include("apps.submit.api.urls")),
    re_path(r"^api/(?P<rest>.*)$", api_not_found),  # JSON, not the project pages' HTML 404
    path("", include("apps.scheduler.urls")),
    path("", include("apps.submit.urls")),
    path("", include("apps.portal.volunteer_urls")),
    path("", include("apps.portal.stats_urls")),
    path("", include("apps.news.urls")),
    # Project pages last: "/<slug>/..." is each project's BOINC master URL tree.
    path("", include("apps.portal.urls")),
]
