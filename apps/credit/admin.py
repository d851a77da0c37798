from django.contrib import admin

from apps.credit.models import PlanClassScale, ScaleSource, TeamAppCredit, UserAppCredit


@admin.register(UserAppCredit)
class UserAppCreditAdmin(admin.ModelAdmin):
    list_display = ["account", "app", "njobs", "total", "expavg"]
    list_filter = ["app"]
    raw_id_fields = ["account"]
    list_select_related = ["account", "app"]
    show_full_result_count = False


@admin.register(TeamAppCredit)
class TeamAppCreditAdmin(admin.ModelAdmin):
    list_display = ["team", "app", "njobs", "total", "expavg"]
    list_filter = ["app"]
    raw_id_fields = ["team"]
    list_select_related = ["team", "app"]


@admin.register(ScaleSource)
class ScaleSourceAdmin(admin.ModelAdmin):
    list_display = ["url", "enabled", "last_fetch", "last_error"]


@admin.register(PlanClassScale)
class PlanClassScaleAdmin(admin.ModelAdmin):
    list_display = ["plan_class", "scale", "weight", "n_versions", "computed_time"]
    readonly_fields = ["plan_class", "scale", "weight", "n_versions", "computed_time"]
