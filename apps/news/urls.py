"""News pages and feeds under each project's master URL, with BOINC's page names."""

from django.urls import path

from apps.news import views

app_name = "news"

urlpatterns = [
    path("<slug:slug>/news.php", views.news_page, name="page"),
    path("<slug:slug>/rss_main.php", views.rss_main, name="rss_main"),
    path("<slug:slug>/notices.php", views.notices, name="notices"),
]
