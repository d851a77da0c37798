from django.urls import path

from apps.portal import volunteer_views as v

app_name = "volunteers"

urlpatterns = [
    path("<slug:slug>/show_user.php", v.show_user, name="user"),
    path("<slug:slug>/show_host_detail.php", v.show_host_detail, name="host"),
    path("<slug:slug>/team_display.php", v.team_display, name="team"),
    path("<slug:slug>/top_users.php", v.top_users, name="top_users"),
    path("<slug:slug>/top_hosts.php", v.top_hosts, name="top_hosts"),
    path("<slug:slug>/top_teams.php", v.top_teams, name="top_teams"),
]
