from django.urls import path
from rest_framework.routers import SimpleRouter

from apps.portal.api.prefs import GlobalPrefsView
from apps.portal.api.tasks import TaskViewSet
from apps.portal.api.views import AppsView, HostViewSet, TeamViewSet, UserViewSet

router = SimpleRouter()
router.register(r"projects/(?P<slug>[-\w]+)/users", UserViewSet, basename="user")
router.register(r"projects/(?P<slug>[-\w]+)/hosts", HostViewSet, basename="host")
router.register(r"projects/(?P<slug>[-\w]+)/teams", TeamViewSet, basename="team")
router.register(r"projects/(?P<slug>[-\w]+)/tasks", TaskViewSet, basename="task")
urlpatterns = [
    path(
        "projects/<slug:slug>/users/<int:pk>/global_prefs/",
        GlobalPrefsView.as_view(),
        name="user-global-prefs",
    ),
    path("projects/<slug:slug>/apps/", AppsView.as_view(), name="apps"),
    *router.urls,
]
