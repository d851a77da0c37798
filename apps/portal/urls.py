from django.urls import path

from apps.portal import status_views, views

app_name = "portal"

urlpatterns = [
    path("", views.home, name="home"),
    path("<slug:slug>/server_status.php", status_views.server_status, name="server_status"),
    path("<slug:slug>/", views.project_home, name="project_home"),
]
