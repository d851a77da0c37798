import django_filters

from apps.work.models import Result, Workunit


class WorkunitFilterSet(django_filters.FilterSet):
    app = django_filters.CharFilter(field_name="app__name")

    class Meta:
        model = Workunit
        fields = ["app", "batch", "need_validate", "assimilate_state", "file_delete_state", "error_mask"]


class ResultFilterSet(django_filters.FilterSet):
    app = django_filters.CharFilter(field_name="app__name")
    workunit = django_filters.CharFilter(field_name="workunit__name")

    class Meta:
        model = Result
        fields = ["app", "workunit", "host", "server_state", "outcome", "validate_state", "client_state"]
