from django.db import migrations, models

# Every scheduler RPC rewrites its host row, and every job sent updates a host_app_version
# row. With no indexed column changed and free room in the page, PostgreSQL makes these
# heap-only (HOT) updates that touch no index. rpc_time was the one indexed column the RPC
# changes; the locality manager's count of active hosts reads it by project instead.
_FILLFACTOR = [
    "ALTER TABLE hosts_host SET (fillfactor = 80)",
    "ALTER TABLE hosts_hostappversion SET (fillfactor = 80)",
]
_FILLFACTOR_RESET = [
    "ALTER TABLE hosts_host RESET (fillfactor)",
    "ALTER TABLE hosts_hostappversion RESET (fillfactor)",
]


def _set(apps, schema_editor, statements):
    if schema_editor.connection.vendor == "postgresql":
        for sql in statements:
            schema_editor.execute(sql)


class Migration(migrations.Migration):
    dependencies = [
        ("hosts", "0002_deleted_records"),
    ]

    operations = [
        migrations.AlterField(
            model_name="host",
            name="rpc_time",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunPython(
            lambda apps, se: _set(apps, se, _FILLFACTOR),
            lambda apps, se: _set(apps, se, _FILLFACTOR_RESET),
        ),
    ]
