from rest_framework.routers import SimpleRouter

from apps.sequences.api.views import WorkSequenceViewSet

router = SimpleRouter()
router.register(r"projects/(?P<slug>[-\w]+)/sequences", WorkSequenceViewSet, basename="worksequence")
urlpatterns = router.urls
