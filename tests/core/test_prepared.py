"""PostgreSQL connections keep DATABASE_PREPARED_MAX prepared statements (apps.core.apps)."""

import pytest
from django.db import connection, connections
from django.test import override_settings

pytestmark = pytest.mark.django_db


@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="psycopg's prepared statements: PostgreSQL only"
)
@override_settings(DATABASE_PREPARED_MAX=321)
def test_a_new_postgresql_connection_gets_the_configured_prepared_statement_limit():
    fresh = connections.create_connection("default")
    try:
        fresh.ensure_connection()
        assert fresh.connection.prepared_max == 321
    finally:
        fresh.close()
