"""Admin for trickle messages: trickle-ups as received (handled or not, and why), trickle-downs
(create one for a host; see whether it was delivered) and the handlers per app and variety."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from apps.core import clock
from apps.trickles.inbox import trickles_handle_again
from apps.trickles.models import MsgFromHost, MsgToHost, TrickleHandler
from apps.trickles.services import TrickleError, trickle_down_create


@admin.register(MsgFromHost)
class MsgFromHostAdmin(admin.ModelAdmin):
    list_display = ["id", "variety", "host", "result_name", "create_time", "handled", "attempts", "error"]
    list_filter = ["handled", "project", "variety"]
    list_select_related = ["host"]
    search_fields = ["result_name", "=host__id"]
    raw_id_fields = ["host", "result"]
    readonly_fields = [f.name for f in MsgFromHost._meta.fields]
    show_full_result_count = False
    actions = ["handle_again"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # only a client sends them

    @admin.action(description="Handle again (after adding or fixing a handler)", permissions=["change"])
    def handle_again(self, request: HttpRequest, queryset: QuerySet[MsgFromHost]) -> None:
        count = trickles_handle_again(message_ids=list(queryset.values_list("id", flat=True)))
        self.message_user(request, f"{count} message(s) queued for their handlers.", messages.SUCCESS)


class MsgToHostForm(forms.ModelForm):
    class Meta:
        model = MsgToHost
        fields = ["project", "host", "result_name", "variety", "xml"]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        project, host = data.get("project"), data.get("host")
        if project is None or host is None or self.errors:
            return data
        try:
            self.instance = trickle_down_create(
                project=project,
                host_id=host.pk,
                variety=data.get("variety", ""),
                body=data.get("xml", ""),
                result_name=data.get("result_name", ""),
                now=clock.now(),
            )
        except TrickleError as exc:
            raise forms.ValidationError(str(exc)) from None
        return data


@admin.register(MsgToHost)
class MsgToHostAdmin(admin.ModelAdmin):
    list_display = ["id", "variety", "host", "result_name", "create_time", "delivered", "delivered_time"]
    list_filter = ["delivered", "project", "variety"]
    list_select_related = ["host"]
    search_fields = ["result_name", "=host__id"]
    raw_id_fields = ["host"]
    show_full_result_count = False
    form = MsgToHostForm

    def get_readonly_fields(self, request: HttpRequest, obj: MsgToHost | None = None) -> list[str]:
        return [f.name for f in MsgToHost._meta.fields] if obj is not None else []

    def save_model(self, request: HttpRequest, obj: MsgToHost, form: Any, change: bool) -> None:
        pass  # the form's clean() created it through the service


@admin.register(TrickleHandler)
class TrickleHandlerAdmin(admin.ModelAdmin):
    list_display = ["app", "variety", "handler", "max_runtime", "enabled"]
    list_filter = ["enabled"]
    list_select_related = ["app"]
    raw_id_fields = ["app"]
