from django.urls import path
from rest_framework.routers import SimpleRouter

from apps.submit.api.views import BatchViewSet, JobFilesQueryView, JobFilesView, ResultFileView

router = SimpleRouter()
router.register(r"projects/(?P<slug>[-\w]+)/submit/batches", BatchViewSet, basename="submit-batch")
urlpatterns = [
    path("projects/<slug:slug>/submit/files/", JobFilesView.as_view(), name="submit-files"),
    path("projects/<slug:slug>/submit/files/query/", JobFilesQueryView.as_view(), name="submit-files-query"),
    path(
        "projects/<slug:slug>/submit/results/<str:name>/files/<int:num>/",
        ResultFileView.as_view(),
        name="submit-result-file",
    ),
    *router.urls,
]
