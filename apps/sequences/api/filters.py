import django_filters

from apps.sequences.models import WorkSequence


class WorkSequenceFilterSet(django_filters.FilterSet):
    # By name, as the workunit and result lists filter: operators know apps by name.
    app = django_filters.CharFilter(field_name="app__name")

    class Meta:
        model = WorkSequence
        fields = ["app", "state"]
