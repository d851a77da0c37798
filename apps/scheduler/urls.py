"""URLs the BOINC client uses, under each project's master URL (/<slug>/...)."""

from django.urls import path
from django.views.decorators.cache import never_cache

from apps.scheduler import account_pages, attach, prefs_pages, transfer, views

urlpatterns = [
    path("<slug:slug>/cgi", views.scheduler_xml, name="scheduler"),
    # Attach-time web RPCs (the names the client appends to the master URL). An answer that
    # holds an account key or the account's own details is kept by no browser or proxy
    # (never_cache: Cache-Control no-store, private), nor is the account page below.
    path("<slug:slug>/get_project_config.php", attach.get_project_config, name="get_project_config"),
    path("<slug:slug>/lookup_account.php", never_cache(attach.lookup_account), name="lookup_account"),
    path("<slug:slug>/create_account.php", never_cache(attach.create_account), name="create_account"),
    path("<slug:slug>/am_get_info.php", never_cache(attach.am_get_info), name="am_get_info"),
    path("<slug:slug>/am_set_host_info.php", never_cache(attach.am_set_host_info), name="am_set_host_info"),
    path("<slug:slug>/am_set_info.php", never_cache(attach.am_set_info), name="am_set_info"),
    # File transfer: Project.download_url/<name> and Project.upload_url.
    path("<slug:slug>/download/<path:name>", transfer.download, name="download"),
    path("<slug:slug>/file_upload_handler", transfer.file_upload_handler, name="file_upload_handler"),
    # Volunteer pages.
    path("<slug:slug>/signup/", account_pages.signup, name="account_signup"),
    path("<slug:slug>/account/", never_cache(account_pages.account_home), name="account_home"),
    path("<slug:slug>/account/logout/", account_pages.account_logout, name="account_logout"),
    path("<slug:slug>/account/prefs/", prefs_pages.account_prefs, name="account_prefs"),
]
