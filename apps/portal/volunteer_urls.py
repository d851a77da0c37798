"""Volunteer pages under each project's master URL, with BOINC's page names."""

from collections.abc import Callable

from django.http.response import HttpResponseBase
from django.urls import path
from django.views.decorators.cache import never_cache
from django.views.generic import RedirectView

from apps.portal import (
    account_views,
    delete_views,
    password_views,
    prefs_views,
    submit_views,
    task_views,
    team_views,
    web_rpcs,
)
from apps.portal import volunteer_views as v

app_name = "volunteers"


def _to(pattern_name: str) -> Callable[..., HttpResponseBase]:
    return RedirectView.as_view(pattern_name=pattern_name, query_string=True)


urlpatterns = [
    path("<slug:slug>/show_user.php", v.show_user, name="user"),
    path("<slug:slug>/show_host_detail.php", v.show_host_detail, name="host"),
    path("<slug:slug>/team_display.php", v.team_display, name="team"),
    path("<slug:slug>/top_users.php", v.top_users, name="top_users"),
    path("<slug:slug>/top_hosts.php", v.top_hosts, name="top_hosts"),
    path("<slug:slug>/top_teams.php", v.top_teams, name="top_teams"),
    # XML web RPCs for statistics sites and tools (show_user.php?format=xml is above). Those
    # taking an account key are kept by no cache (never_cache), as lookup_account.php.
    path("<slug:slug>/team_lookup.php", web_rpcs.team_lookup, name="team_lookup"),
    path("<slug:slug>/team_email_list.php", web_rpcs.team_email_list, name="team_email_list"),
    path(
        "<slug:slug>/team_members_list.php", never_cache(web_rpcs.team_members_list), name="team_members_list"
    ),
    path("<slug:slug>/apps.php", web_rpcs.apps_page, name="apps"),
    path("<slug:slug>/pending.php", never_cache(web_rpcs.pending), name="pending"),
    # Tasks.
    path("<slug:slug>/results.php", task_views.results, name="results"),
    path("<slug:slug>/result.php", task_views.result, name="result"),
    path("<slug:slug>/workunit.php", task_views.workunit, name="workunit"),
    # Job submission, for submitters.
    path("<slug:slug>/submit.php", submit_views.batches, name="submit"),
    path("<slug:slug>/submit_batch.php", submit_views.batch, name="submit_batch"),
    path("<slug:slug>/submit_batch_action.php", submit_views.batch_action, name="submit_batch_action"),
    path("<slug:slug>/submit_output.php", never_cache(submit_views.batch_output), name="submit_output"),
    # Teams.
    path("<slug:slug>/team_create.php", team_views.create, name="team_create"),
    path("<slug:slug>/team_edit.php", team_views.edit, name="team_edit"),
    path("<slug:slug>/team_join.php", team_views.join, name="team_join"),
    path("<slug:slug>/team_quit.php", team_views.quit_team, name="team_quit"),
    path("<slug:slug>/team_change_founder.php", team_views.change_founder, name="team_change_founder"),
    path("<slug:slug>/team_founder_transfer.php", team_views.founder_transfer, name="team_founder_transfer"),
    # Account.
    path("<slug:slug>/edit_user_info.php", account_views.edit_user_info, name="edit_user_info"),
    path("<slug:slug>/edit_email.php", account_views.edit_email, name="edit_email"),
    path("<slug:slug>/edit_passwd.php", account_views.edit_passwd, name="edit_passwd"),
    path("<slug:slug>/weak_auth.php", never_cache(account_views.weak_auth), name="weak_auth"),
    path(
        "<slug:slug>/delete_account_request.php", delete_views.delete_request, name="delete_account_request"
    ),
    path(
        "<slug:slug>/delete_account_confirm.php", delete_views.delete_confirm, name="delete_account_confirm"
    ),
    path("<slug:slug>/delete_account_cancel.php", delete_views.delete_cancel, name="delete_account_cancel"),
    # BOINC's names of the account pages, which volunteers' bookmarks and the BOINC Manager's
    # links use: sent on (query string kept) to the pages that do the same here.
    path("<slug:slug>/home.php", _to("account_home"), name="boinc_home"),
    path("<slug:slug>/edit_user_info_form.php", _to("volunteers:edit_user_info"), name="edit_user_info_form"),
    path("<slug:slug>/edit_email_form.php", _to("volunteers:edit_email"), name="edit_email_form"),
    path("<slug:slug>/edit_passwd_form.php", _to("volunteers:edit_passwd"), name="edit_passwd_form"),
    path("<slug:slug>/get_passwd.php", password_views.PasswordResetView.as_view(), name="password_reset"),
    path(
        "<slug:slug>/get_passwd.php/sent/",
        password_views.PasswordResetDoneView.as_view(),
        name="password_reset_done",
    ),
    path(
        "<slug:slug>/reset_passwd/<uidb64>/<token>/",
        password_views.PasswordResetConfirmView.as_view(),
        name="password_reset_confirm",
    ),
    path(
        "<slug:slug>/reset_passwd/done/",
        password_views.PasswordResetCompleteView.as_view(),
        name="password_reset_complete",
    ),
    # Computing preferences.
    path("<slug:slug>/prefs.php", prefs_views.prefs, name="prefs"),
    path("<slug:slug>/prefs_edit.php", prefs_views.prefs_edit, name="prefs_edit"),
    path("<slug:slug>/prefs_remove.php", prefs_views.prefs_remove, name="prefs_remove"),
    path("<slug:slug>/host_venue_action.php", prefs_views.host_venue, name="host_venue"),
]
