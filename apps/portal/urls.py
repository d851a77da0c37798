from django.urls import path

from apps.portal import views

app_name = "portal"

urlpatterns = [
    path("", views.home, name="home"),
    path("<slug:slug>/", views.project_home, name="project_home"),
]
