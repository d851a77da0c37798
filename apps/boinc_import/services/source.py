"""Reading a BOINC project's MySQL/MariaDB database (PyMySQL: pure Python, no client headers).

Tables are read in key order in batches (keyset pagination: ``WHERE key > last ORDER BY key
LIMIT n``), so each query is an index range however far the import has got, and a run
that stops can resume after the last key it wrote.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

import pymysql

from apps.boinc_import.domain import Row

DEFAULT_PORT = 3306


class SourceError(Exception):
    """The BOINC database cannot be reached or read; the message says why."""


@dataclass(frozen=True, slots=True)
class SourceUrl:
    host: str
    port: int
    user: str
    password: str
    database: str

    @property
    def display(self) -> str:
        """Where the data came from, without the password."""
        return f"mysql://{self.user}@{self.host}:{self.port}/{self.database}"


def parse_source_url(url: str) -> SourceUrl:
    """``mysql://user:password@host:port/database`` (also ``mariadb://``)."""
    parts = urlsplit(url)
    if parts.scheme not in ("mysql", "mariadb"):
        raise SourceError(f"{url!r}: expected mysql://user:password@host:port/database")
    database = parts.path.lstrip("/")
    if not database or "/" in database:
        raise SourceError(f"{url!r}: the URL must name the BOINC database (…/database)")
    try:
        port = parts.port or DEFAULT_PORT
    except ValueError as exc:
        raise SourceError(f"{url!r}: {exc}") from None
    return SourceUrl(
        host=parts.hostname or "127.0.0.1",
        port=port,
        user=unquote(parts.username or "root"),
        password=unquote(parts.password or ""),
        database=unquote(database),
    )


class BoincSource:
    """A connection to the BOINC database, read-only by use."""

    def __init__(self, url: str) -> None:
        self.url = parse_source_url(url)
        try:
            self._conn = pymysql.connect(
                host=self.url.host,
                port=self.url.port,
                user=self.url.user,
                password=self.url.password,
                database=self.url.database,
                charset="utf8mb4",
                autocommit=True,
                connect_timeout=10,
            )
        except pymysql.MySQLError as exc:
            raise SourceError(f"cannot connect to {self.url.display}: {exc}") from None

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> BoincSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        """Every row of a query, each as {column: value}."""
        try:
            with self._conn.cursor() as cursor:
                cursor.execute(sql, params)
                names = [d[0] for d in cursor.description or ()]
                return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
        except pymysql.MySQLError as exc:
            raise SourceError(f"{self.url.display}: {exc} (in: {sql[:200]})") from None

    def scalar(self, sql: str, params: Sequence[Any] = ()) -> Any:
        rows = self.rows(sql, params)
        return next(iter(rows[0].values())) if rows else None

    def columns(self) -> dict[str, set[str]]:
        """Every table of the database with its columns."""
        found: dict[str, set[str]] = {}
        for row in self.rows(
            "SELECT table_name AS t, column_name AS c FROM information_schema.columns"
            " WHERE table_schema = DATABASE()"
        ):
            found.setdefault(row["t"], set()).add(row["c"])
        return found

    def batches(self, query: TableQuery, *, after: int, size: int) -> Iterator[tuple[list[Row], int]]:
        """(rows, last key) batches of the rows with key > ``after``, in key order.

        For a table keyed by two columns a batch never splits the rows of one first key:
        the last key's rows are left for the next batch (all read at once if a single key
        has more than ``size`` rows).
        """
        while True:
            rows = self.rows(query.after_sql(size), [after])
            if not rows:
                return
            last = rows[-1][query.key_alias]
            if query.key2 and len(rows) == size:
                complete = [r for r in rows if r[query.key_alias] != last]
                if complete:
                    rows, last = complete, complete[-1][query.key_alias]
                else:
                    rows = self.rows(query.equal_sql(), [last])
            yield rows, last
            after = last

    def rows_with_keys(self, query: TableQuery, keys: Sequence[int]) -> list[Row]:
        """The rows whose first key is one of ``keys`` (to try refused rows again)."""
        rows: list[Row] = []
        for start in range(0, len(keys), 1000):
            chunk = list(keys[start : start + 1000])
            marks = ", ".join(["%s"] * len(chunk))
            rows += self.rows(query.in_sql(marks), chunk)
        return rows


@dataclass(frozen=True, slots=True)
class TableQuery:
    """How one BOINC table is read: the SELECT list, joins, filter and key columns.

    ``key`` is the qualified first key column (``u.id``); its value comes back as
    ``key_alias``. ``key2`` names the second key column of tables keyed by two.
    """

    select: str
    from_: str
    key: str
    key_alias: str = "id"
    key2: str = ""
    where: str = ""

    def _base(self) -> str:
        return f"SELECT {self.select} FROM {self.from_} WHERE "

    def _filter(self) -> str:
        return f" AND ({self.where})" if self.where else ""

    def _order(self) -> str:
        return f" ORDER BY {self.key}" + (f", {self.key2}" if self.key2 else "")

    def after_sql(self, size: int) -> str:
        return f"{self._base()}{self.key} > %s{self._filter()}{self._order()} LIMIT {int(size)}"

    def equal_sql(self) -> str:
        return f"{self._base()}{self.key} = %s{self._filter()}{self._order()}"

    def in_sql(self, marks: str) -> str:
        return f"{self._base()}{self.key} IN ({marks}){self._filter()}{self._order()}"

    def count_sql(self) -> str:
        return f"SELECT COUNT(*) FROM {self.from_}" + (f" WHERE {self.where}" if self.where else "")

    def count_upto_sql(self) -> str:
        return f"SELECT COUNT(*) FROM {self.from_} WHERE {self.key} <= %s{self._filter()}"

    def range_sql(self) -> str:
        return f"SELECT MIN({self.key}) AS lo, MAX({self.key}) AS hi FROM {self.from_}" + (
            f" WHERE {self.where}" if self.where else ""
        )
