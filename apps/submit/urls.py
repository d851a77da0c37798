from django.urls import path

from apps.submit import views

urlpatterns = [
    path("<slug:slug>/submit_rpc_handler.php", views.submit_rpc_handler, name="submit_rpc_handler"),
    path("<slug:slug>/job_file.php", views.job_file, name="job_file"),
    path("<slug:slug>/get_output.php", views.get_output, name="get_output"),
]
