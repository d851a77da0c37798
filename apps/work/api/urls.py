from rest_framework.routers import SimpleRouter

from apps.work.api.views import ResultViewSet, WorkunitViewSet

router = SimpleRouter()
router.register(r"projects/(?P<slug>[-\w]+)/workunits", WorkunitViewSet, basename="workunit")
router.register(r"projects/(?P<slug>[-\w]+)/results", ResultViewSet, basename="result")
urlpatterns = router.urls
