from rest_framework.routers import SimpleRouter

from apps.portal.api.views import HostViewSet, TeamViewSet, UserViewSet

router = SimpleRouter()
router.register(r"projects/(?P<slug>[-\w]+)/users", UserViewSet, basename="user")
router.register(r"projects/(?P<slug>[-\w]+)/hosts", HostViewSet, basename="host")
router.register(r"projects/(?P<slug>[-\w]+)/teams", TeamViewSet, basename="team")
urlpatterns = router.urls
