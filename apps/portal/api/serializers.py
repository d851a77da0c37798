from rest_framework import serializers

from apps.hosts.models import Host
from apps.volunteers.models import Account, Team


class UserSerializer(serializers.ModelSerializer):
    cpid = serializers.SerializerMethodField()
    team: serializers.SlugRelatedField = serializers.SlugRelatedField(
        slug_field="name", read_only=True, allow_null=True
    )

    class Meta:
        model = Account
        fields = [
            "id",
            "name",
            "country",
            "url",
            "create_time",
            "total_credit",
            "expavg_credit",
            "cpid",
            "team",
        ]

    def get_cpid(self, account: Account) -> str | None:
        # The cross-project id links a user across projects: only with stats export consent.
        return account.public_cpid if account.stats_export_consent else None


class HostSerializer(serializers.ModelSerializer):
    owner = serializers.SerializerMethodField()

    class Meta:
        model = Host
        fields = [
            "id",
            "owner",
            "p_ncpus",
            "p_vendor",
            "p_model",
            "p_fpops",
            "os_name",
            "os_version",
            "total_credit",
            "expavg_credit",
            "create_time",
            "rpc_time",
        ]

    def get_owner(self, host: Host) -> int | None:
        return host.account_id if host.account.show_hosts else None


class TeamSerializer(serializers.ModelSerializer):
    founder: serializers.SlugRelatedField = serializers.SlugRelatedField(
        slug_field="name", read_only=True, allow_null=True
    )
    founder_id = serializers.IntegerField(read_only=True, allow_null=True)
    nusers = serializers.IntegerField(read_only=True, help_text="Members")

    class Meta:
        model = Team
        fields = [
            "id",
            "name",
            "type",
            "founder",
            "founder_id",
            "nusers",
            "joinable",
            "country",
            "url",
            "description",
            "create_time",
            "total_credit",
            "expavg_credit",
        ]
