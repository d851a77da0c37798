from rest_framework.routers import SimpleRouter

from apps.trickles.api.views import TrickleDownViewSet, TrickleUpViewSet

router = SimpleRouter()
router.register(r"projects/(?P<slug>[-\w]+)/trickle_ups", TrickleUpViewSet, basename="trickle-up")
router.register(r"projects/(?P<slug>[-\w]+)/trickle_downs", TrickleDownViewSet, basename="trickle-down")
urlpatterns = router.urls
