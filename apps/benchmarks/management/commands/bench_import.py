"""bench_import: how long moving a big BOINC project into Cobblestone takes.

    python manage.py bench_import [--users 100000] [--hosts 200000] [--results 1000000]
        [--batch-size 5000] [--mysql URL] [--database-url URL]

Every run uses throw-away databases and data areas, never the configured ones:

1. A BOINC database on the MySQL/MariaDB server ``--mysql`` (default
   COBBLESTONE_TEST_MYSQL_URL) names, made from apps.benchmarks.boinc_schema and filled
   with LOAD DATA LOCAL INFILE: the users (one team per 20), their hosts (one
   host_app_version each), per-app credit of users and teams, and the results, two per
   workunit, one in progress on a host and one unsent; plus a project directory (config.xml,
   keys, a signed app version, input files, the result template).
2. A Cobblestone database: a new PostgreSQL database on the server ``--database-url`` (default
   COBBLESTONE_TEST_DATABASE_URL) names, or an SQLite file; its schema by ``migrate`` in a
   subprocess.
3. ``import_boinc``'s run in a second subprocess against it, timed per table.

The command prints the table (rows, seconds and rows per second per table, and the total)
with the machine's load, then drops both databases.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pymysql
from django.core.management.base import BaseCommand, CommandError

from apps.benchmarks.boinc_schema import TABLES, create_table_sql
from apps.benchmarks.stack import admin_sql, with_db
from apps.benchmarks.support import last_json, run_manage, schema_create
from apps.boinc_import.domain import hier_dir
from apps.boinc_import.services.source import parse_source_url
from apps.core.domain.signing import generate_key_pair, sign_md5_hex
from apps.core.private_files import private_write

SLUG = "bench-import"
PLATFORM = "x86_64-pc-linux-gnu"
APP_FILE = "bench_1.00_x86_64-pc-linux-gnu"
APP_BYTES = b"#!/bin/sh\necho 0 > boinc_finish_called\n"
INPUT_FILES = 16
FANOUT = 1024
DAY = 86400.0
TEMPLATE = (
    b"<output_template><file_info><name><OUTFILE_0/></name><generated_locally/><upload_when_present/>"
    b"<max_nbytes>100000</max_nbytes><url><UPLOAD_URL/></url></file_info><result><file_ref>"
    b"<file_name><OUTFILE_0/></file_name><open_name>out</open_name></file_ref></result></output_template>\n"
)


def _log(message: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {message}", file=sys.stderr, flush=True)


def _md5(text: str) -> str:
    return hashlib.md5(text.encode()).hexdigest()


# --- step 1: the BOINC project ------------------------------------------------------------


def project_dir_make(root: Path) -> str:
    """config.xml, keys, the app file and input files in the hashed download area, the
    result template; the app version's xml_doc (signed with the new code-signing key)."""
    code, upload = generate_key_pair(), generate_key_pair()
    (root / "keys").mkdir(parents=True)
    (root / "keys" / "code_sign_public").write_text(code.public_text)
    (root / "keys" / "upload_public").write_text(upload.public_text)
    private_write(root / "keys" / "upload_private", upload.private_text)
    (root / "config.xml").write_text(
        f"<boinc><config><master_url>http://bench.example.org/{SLUG}/</master_url>"
        "<long_name>Import benchmark</long_name></config></boinc>\n"
    )
    (root / "templates").mkdir()
    (root / "templates" / "bench_out").write_bytes(TEMPLATE)
    files = {APP_FILE: APP_BYTES} | {f"bench_in_{i}": f"input {i}\n".encode() for i in range(INPUT_FILES)}
    for name, data in files.items():
        path = root / "download" / hier_dir(name, FANOUT) / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    (root / "upload").mkdir()
    md5 = hashlib.md5(APP_BYTES).hexdigest()
    signature = sign_md5_hex(code.private_text, md5)
    return (
        f"<file_info><name>{APP_FILE}</name><executable/><file_signature>{signature}</file_signature>"
        f"<nbytes>{len(APP_BYTES)}</nbytes><md5_cksum>{md5}</md5_cksum></file_info>"
        f"<app_version><app_name>bench</app_name><version_num>100</version_num>"
        f"<file_ref><file_name>{APP_FILE}</file_name><main_program/></file_ref></app_version>"
    )


class Loader:
    """Writes a table's rows to a tab-separated file and loads it (LOAD DATA LOCAL INFILE)."""

    def __init__(self, conn: Any, work: Path) -> None:
        self.conn, self.work = conn, work

    def load(self, table: str, columns: list[str], lines: Any) -> int:
        path = self.work / f"{table}.tsv"
        count = 0
        with path.open("w") as out:
            for line in lines:
                out.write("\t".join(str(v) for v in line) + "\n")
                count += 1
        with self.conn.cursor() as cursor:
            cursor.execute(
                f"LOAD DATA LOCAL INFILE %s INTO TABLE `{table}` FIELDS TERMINATED BY '\\t' "
                f"({', '.join(columns)})",
                [str(path)],
            )
        path.unlink()
        return count


def boinc_fill(conn: Any, work: Path, *, users: int, hosts: int, results: int, version_doc: str) -> None:
    rng = random.Random(1)
    now = time.time()
    teams = max(1, users // 20)
    workunits = max(1, results // 2)
    load = Loader(conn, work).load
    with conn.cursor() as cursor:
        cursor.execute(
            "INSERT INTO platform (id, name, user_friendly_name) VALUES (1, %s, 'Linux on x86_64')",
            [PLATFORM],
        )
        cursor.execute(
            "INSERT INTO app (id, name, user_friendly_name, create_time) VALUES (1, 'bench', 'Bench', %s)",
            [int(now - 400 * DAY)],
        )
        cursor.execute(
            "INSERT INTO app_version (id, appid, platformid, version_num, xml_doc, create_time, pfc_n, pfc_avg)"
            " VALUES (1, 1, 1, 100, %s, %s, 1000, 2.0)",
            [version_doc, int(now - 300 * DAY)],
        )
    load(
        "team",
        ["id", "create_time", "userid", "name", "type", "total_credit", "expavg_credit", "expavg_time"],
        (
            (i, int(now - 300 * DAY), i * 20, f"Team {i}", 1 + i % 7, 1e5, 500.0, now - rng.random() * DAY)
            for i in range(1, teams + 1)
        ),
    )
    user_columns = ["id", "create_time", "email_addr", "name", "authenticator", "country", "total_credit"]
    user_columns += ["expavg_credit", "expavg_time", "teamid", "cross_project_id", "passwd_hash"]
    load(
        "user",
        user_columns,
        (
            (
                i, int(now - 200 * DAY), f"user{i}@example.org", f"User {i}", _md5(f"a{i}"), "Iceland",
                rng.random() * 1e5, rng.random() * 100, now - rng.random() * 5 * DAY,
                1 + i % teams if i % 3 else 0, _md5(f"c{i}"), _md5(f"p{i}"),
            )
            for i in range(1, users + 1)
        ),
    )  # fmt: skip
    host_columns = ["id", "create_time", "userid", "rpc_seqno", "rpc_time", "total_credit", "expavg_credit"]
    host_columns += [
        "expavg_time",
        "domain_name",
        "host_cpid",
        "os_name",
        "p_vendor",
        "p_model",
        "error_rate",
    ]
    load(
        "host",
        host_columns,
        (
            (
                i, int(now - 100 * DAY), 1 + i % users, 10 + i % 50, int(now - 3600), rng.random() * 5e4,
                rng.random() * 50, now - rng.random() * 5 * DAY, f"host{i}", _md5(f"h{i}"), "Linux",
                "GenuineIntel", "Intel(R) Core(TM) i7", 0.01,
            )
            for i in range(1, hosts + 1)
        ),
    )  # fmt: skip
    load(
        "host_app_version",
        [
            "host_id",
            "app_version_id",
            "pfc_n",
            "pfc_avg",
            "et_n",
            "et_avg",
            "max_jobs_per_day",
            "consecutive_valid",
        ],
        ((i, 1, 20, 2.0, 20, 1e-9, 40, 10) for i in range(1, hosts + 1)),
    )
    credit = ["appid", "njobs", "total", "expavg", "expavg_time"]
    load("credit_user", ["userid", *credit], ((i, 1, 10, 1e4, 50.0, now - DAY) for i in range(1, users + 1)))
    load(
        "credit_team", ["teamid", *credit], ((i, 1, 200, 1e5, 500.0, now - DAY) for i in range(1, teams + 1))
    )
    load(
        "workunit",
        ["id", "create_time", "appid", "name", "xml_doc", "transition_time", "result_template_file"],
        (
            (i, int(now - DAY), 1, f"wu_{i}", _wu_doc(i), int(now + 7 * DAY), "templates/bench_out")
            for i in range(1, workunits + 1)
        ),
    )
    result_columns = [
        "id",
        "create_time",
        "workunitid",
        "server_state",
        "hostid",
        "userid",
        "report_deadline",
    ]
    result_columns += ["sent_time", "name", "xml_doc_in", "appid", "app_version_id", "flops_estimate"]
    load("result", result_columns, (_result(i, now, hosts, users, rng) for i in range(1, 2 * workunits + 1)))


def _wu_doc(i: int) -> str:
    name = f"bench_in_{i % INPUT_FILES}"
    return (
        f"<file_info><name>{name}</name><md5_cksum>{_md5(f'input {i % INPUT_FILES}' + chr(10))}</md5_cksum>"
        f"<nbytes>{len(f'input {i % INPUT_FILES}') + 1}</nbytes></file_info>"
        f"<workunit><file_ref><file_name>{name}</file_name><open_name>in</open_name></file_ref></workunit>"
    )


def _result(i: int, now: float, hosts: int, users: int, rng: random.Random) -> tuple[Any, ...]:
    wu, replica = (i + 1) // 2, (i + 1) % 2
    name = f"wu_{wu}_{replica}"
    doc = (
        f"<file_info><name>{name}_r1_0</name><generated_locally/><upload_when_present/>"
        f"<max_nbytes>100000</max_nbytes><url>http://bench.example.org/cgi/file_upload_handler</url></file_info>"
        f"<result><file_ref><file_name>{name}_r1_0</file_name><open_name>out</open_name></file_ref></result>"
    )
    if replica == 0:  # in progress on a host
        host = rng.randrange(1, hosts + 1)
        return (
            i,
            int(now - DAY),
            wu,
            4,
            host,
            1 + host % users,
            int(now + 6 * DAY),
            int(now - DAY),
            name,
            doc,
            1,
            1,
            3e10,
        )
    return (i, int(now - DAY), wu, 2, 0, 0, 0, 0, name, doc, 1, 0, 0.0)


# --- step 3: the import, in a process whose DATABASE_URL is the throw-away database -------


def run_role(*, mysql_url: str, project_dir: Path, batch_size: int) -> dict[str, Any]:
    from apps.boinc_import.services.run import boinc_import_run

    def progress(table: str, done: int, total: int) -> None:
        if done == total or done % (batch_size * 40) == 0:
            _log(f"{table}: {done:,} of {total:,}")

    summary = boinc_import_run(
        slug=SLUG, mysql_url=mysql_url, project_dir=project_dir, batch_size=batch_size, progress=progress
    )
    return {
        "tables": [
            {
                "table": s.table,
                "rows": s.read,
                "imported": s.imported,
                "refused": s.refused,
                "seconds": s.seconds,
            }
            for s in summary.tables
        ],
        "seconds": summary.seconds,
    }


def orchestrate(
    *, users: int, hosts: int, results: int, batch_size: int, mysql_url: str, pg_url: str
) -> dict[str, Any]:
    token = f"{os.getpid()}_{random.randrange(1 << 30)}"
    work = Path(tempfile.mkdtemp(prefix="cobblestone-import-"))
    server = parse_source_url(mysql_url)
    boinc_name = f"boinc_bench_{token}"
    db_name = f"cobblestone_import_{token}"
    db_url = with_db(pg_url, db_name) if pg_url else f"sqlite:///{work / 'bench.sqlite3'}"
    conn = pymysql.connect(
        host=server.host, port=server.port, user=server.user, password=server.password,
        autocommit=True, local_infile=True, charset="utf8mb4",
    )  # fmt: skip
    env = {
        **os.environ,
        "DATABASE_URL": db_url,
        "COBBLESTONE_DATA_DIR": str(work / "data"),
        "COBBLESTONE_VAR_DIR": str(work / "var"),
        "DEBUG": "false",
        "SECRET_KEY": f"bench-import-{token}",
        "LOG_LEVEL": "WARNING",
    }
    try:
        with conn.cursor() as cursor:
            cursor.execute(f"CREATE DATABASE `{boinc_name}` CHARACTER SET utf8mb4")
            cursor.execute(f"USE `{boinc_name}`")
            for table in TABLES:
                cursor.execute(create_table_sql(table))
        load_before = os.getloadavg()
        started = time.monotonic()
        _log(f"generating the BOINC database {boinc_name}")
        version_doc = project_dir_make(work / "boinc")
        boinc_fill(conn, work, users=users, hosts=hosts, results=results, version_doc=version_doc)
        generated = time.monotonic() - started
        if pg_url:
            admin_sql(pg_url, f'CREATE DATABASE "{db_name}"')
        schema = last_json(run_manage("bench_import", ["--role", "schema"], env))["schema"]
        source = f"mysql://{server.user}:{server.password}@{server.host}:{server.port}/{boinc_name}"
        args = [
            "--role",
            "run",
            "--mysql",
            source,
            "--project-dir",
            str(work / "boinc"),
            "--batch-size",
            str(batch_size),
        ]
        figures = last_json(run_manage("bench_import", args, env, timeout=4 * 3600, echo_stderr=True))
        return {
            **figures,
            "generated_seconds": generated,
            "database": "postgresql" if pg_url else "sqlite",
            "schema": schema,
            "load_before": load_before,
            "load_after": os.getloadavg(),
        }
    finally:
        with conn.cursor() as cursor:
            cursor.execute(f"DROP DATABASE IF EXISTS `{boinc_name}`")
        conn.close()
        if pg_url:
            try:
                admin_sql(pg_url, f'DROP DATABASE IF EXISTS "{db_name}" WITH (FORCE)')
            except Exception as exc:
                _log(f"could not drop {db_name}: {exc}")
        shutil.rmtree(work, ignore_errors=True)


def format_report(f: dict[str, Any]) -> list[str]:
    lines = [f"{'table':<18}{'rows':>11}{'imported':>11}{'seconds':>9}{'rows/s':>10}"]
    for t in f["tables"]:
        rate = t["rows"] / t["seconds"] if t["seconds"] else 0.0
        lines.append(
            f"{t['table']:<18}{t['rows']:>11,}{t['imported']:>11,}{t['seconds']:>9.1f}{rate:>10,.0f}"
        )
    total_rows = sum(t["rows"] for t in f["tables"])
    lines.append(
        f"{'total':<18}{total_rows:>11,}{'':>11}{f['seconds']:>9.1f}{total_rows / f['seconds']:>10,.0f}"
    )
    before = " ".join(f"{x:.2f}" for x in f["load_before"])
    after = " ".join(f"{x:.2f}" for x in f["load_after"])
    lines.append(
        f"into {f['database']} (schema from {f['schema']}); BOINC database generated in {f['generated_seconds']:.0f} s"
    )
    lines.append(f"machine: {os.cpu_count()} CPUs, load average {before} before, {after} after")
    return lines


class Command(BaseCommand):
    help = "Time the import of a generated BOINC project of the given size."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--users", type=int, default=100_000)
        parser.add_argument("--hosts", type=int, default=200_000)
        parser.add_argument("--results", type=int, default=1_000_000, help="two per workunit")
        parser.add_argument("--batch-size", type=int, default=5000)
        parser.add_argument("--mysql", default=os.environ.get("COBBLESTONE_TEST_MYSQL_URL", ""))
        parser.add_argument("--database-url", default=os.environ.get("COBBLESTONE_TEST_DATABASE_URL", ""))
        parser.add_argument("--role", choices=["schema", "run"], help="(internal)")
        parser.add_argument("--project-dir", type=Path, help="(internal)")

    def handle(self, *args: Any, **opts: Any) -> None:
        if opts["role"] == "schema":
            self.stdout.write(json.dumps({"schema": schema_create()}))
            return
        if opts["role"] == "run":
            figures = run_role(
                mysql_url=opts["mysql"], project_dir=opts["project_dir"], batch_size=opts["batch_size"]
            )
            self.stdout.write(json.dumps(figures))
            return
        if not opts["mysql"]:
            raise CommandError("--mysql (or COBBLESTONE_TEST_MYSQL_URL) must name a MySQL/MariaDB server")
        if min(opts["users"], opts["hosts"], opts["results"]) < 2:
            raise CommandError("--users, --hosts and --results must be at least 2")
        figures = orchestrate(
            users=opts["users"],
            hosts=opts["hosts"],
            results=opts["results"],
            batch_size=opts["batch_size"],
            mysql_url=opts["mysql"],
            pg_url=opts["database_url"],
        )
        for line in format_report(figures):
            self.stdout.write(line)
