"""A BOINC project database for the import tests, built in the private MariaDB server from
the schema description the benchmark uses too (apps.benchmarks.boinc_schema); rows are
added with ``BoincDb.add`` giving only the columns a test cares about."""

from __future__ import annotations

import itertools
import os
from typing import Any

import pymysql

from apps.benchmarks.boinc_schema import TABLES, create_table_sql
from apps.boinc_import.services.source import parse_source_url

_numbers = itertools.count()


class BoincDb:
    """A throw-away BOINC database on the test MariaDB server."""

    def __init__(self, server_url: str) -> None:
        url = parse_source_url(server_url)
        self.name = f"boinc_{os.getpid()}_{next(_numbers)}"
        self.url = f"mysql://{url.user}:{url.password}@{url.host}:{url.port}/{self.name}"
        self.conn = pymysql.connect(
            host=url.host,
            port=url.port,
            user=url.user,
            password=url.password,
            autocommit=True,
            charset="utf8mb4",
        )
        self.execute(f"CREATE DATABASE `{self.name}` CHARACTER SET utf8mb4")
        self.execute(f"USE `{self.name}`")
        for table in TABLES:
            self.execute(create_table_sql(table))

    def execute(self, sql: str, params: Any = None) -> None:
        with self.conn.cursor() as cursor:
            cursor.execute(sql, params)

    def executemany(self, sql: str, params: Any) -> None:
        with self.conn.cursor() as cursor:
            cursor.executemany(sql, params)

    def query(self, sql: str, params: Any = None) -> list[tuple[Any, ...]]:
        with self.conn.cursor() as cursor:
            cursor.execute(sql, params)
            return list(cursor.fetchall())

    def add(self, table: str, **values: Any) -> int:
        """Insert one row (unnamed columns take their defaults); returns its id."""
        names = ", ".join(f"`{name}`" for name in values)
        marks = ", ".join(["%s"] * len(values))
        with self.conn.cursor() as cursor:
            cursor.execute(f"INSERT INTO `{table}` ({names}) VALUES ({marks})", list(values.values()))
            return int(cursor.lastrowid or values.get("id", 0))

    def clear(self) -> None:
        for table in TABLES:
            self.execute(f"DELETE FROM `{table}`")

    def drop(self) -> None:
        self.execute(f"DROP DATABASE IF EXISTS `{self.name}`")
        self.conn.close()
