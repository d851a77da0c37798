"""Operators' API: JSON shapes of trickle messages, and the trickle-down creation request."""

from __future__ import annotations

from rest_framework import serializers

from apps.trickles.models import MsgFromHost, MsgToHost


class MsgFromHostSerializer(serializers.ModelSerializer):
    class Meta:
        model = MsgFromHost
        fields = [
            "id",
            "host",
            "result_name",
            "variety",
            "xml",
            "send_time",
            "create_time",
            "handled",
            "handled_time",
            "attempts",
            "error",
        ]


class MsgToHostSerializer(serializers.ModelSerializer):
    class Meta:
        model = MsgToHost
        fields = ["id", "host", "result_name", "variety", "xml", "create_time", "delivered", "delivered_time"]
        read_only_fields = ["id", "create_time", "delivered", "delivered_time"]


class TrickleDownCreateSerializer(serializers.Serializer):
    host = serializers.IntegerField(min_value=1)
    variety = serializers.CharField(max_length=254)
    xml = serializers.CharField(allow_blank=True, trim_whitespace=False)
    result_name = serializers.CharField(max_length=254, required=False, default="", allow_blank=True)
