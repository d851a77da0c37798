"""A BOINC project to import: its database in the private MariaDB server and its project
directory (config.xml, keys, download area with a signed app and an input file)."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator
from dataclasses import dataclass
from io import StringIO
from pathlib import Path

import bcrypt
import pytest
from django.core.management import call_command

from apps.boinc_import.domain import hier_dir
from apps.core.domain.signing import KeyPair, generate_key_pair, sign_md5_hex
from apps.volunteers.models import passwd_hash
from tests.boinc_import.boinc_db import BoincDb
from tests.conftest import require_service

PLATFORM = "x86_64-pc-linux-gnu"
FANOUT = 1024
APP_FILE = "worker_1.00_x86_64-pc-linux-gnu"
APP_BYTES = b"#!/bin/sh\necho 0 > boinc_finish_called\n"
INPUT_FILE = "input_a"
INPUT_BYTES = b"numbers 1 2 3\n"
OUTPUT_MAX = 10_000
RESULT_TEMPLATE = b"""<output_template>
<file_info><name><OUTFILE_0/></name><generated_locally/><upload_when_present/>
<max_nbytes>10000</max_nbytes><url><UPLOAD_URL/></url></file_info>
<result><file_ref><file_name><OUTFILE_0/></file_name><open_name>out</open_name></file_ref></result>
</output_template>
"""


@dataclass(frozen=True, slots=True)
class Keys:
    code_sign: KeyPair
    upload: KeyPair


@pytest.fixture(scope="session")
def keys() -> Keys:
    return Keys(code_sign=generate_key_pair(), upload=generate_key_pair())


@pytest.fixture(scope="session")
def boinc_server() -> str:
    return require_service("COBBLESTONE_TEST_MYSQL_URL", "The private MariaDB server")


@pytest.fixture(scope="session")
def _shared_db(boinc_server: str) -> Iterator[BoincDb]:
    db = BoincDb(boinc_server)
    yield db
    db.drop()


@pytest.fixture
def boinc_db(_shared_db: BoincDb) -> BoincDb:
    """An empty BOINC database (the tables of one session, emptied for each test)."""
    _shared_db.clear()
    return _shared_db


def write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def hier(area: Path, name: str) -> Path:
    return area / hier_dir(name, FANOUT) / name


@pytest.fixture
def project_dir(tmp_path: Path, keys: Keys) -> Path:
    """A BOINC project directory: config.xml, keys, templates, download and upload areas."""
    root = tmp_path / "boincproj"
    write(
        root / "config.xml",
        b"<boinc><config><master_url>http://boinc.example.org/oldproj/</master_url>"
        b"<long_name>Old Project</long_name><uldl_dir_fanout>1024</uldl_dir_fanout>"
        b"<daily_result_quota>50</daily_result_quota></config><daemons/></boinc>\n",
    )
    write(root / "keys" / "code_sign_public", keys.code_sign.public_text.encode())
    write(root / "keys" / "upload_public", keys.upload.public_text.encode())
    write(root / "keys" / "upload_private", keys.upload.private_text.encode())
    write(root / "templates" / "worker_out", RESULT_TEMPLATE)
    write(hier(root / "download", APP_FILE), APP_BYTES)
    write(hier(root / "download", INPUT_FILE), INPUT_BYTES)
    (root / "upload").mkdir()
    return root


def md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


def app_version_doc(keys: Keys) -> str:
    signature = sign_md5_hex(keys.code_sign.private_text, md5(APP_BYTES))
    return (
        f"<file_info>\n<name>{APP_FILE}</name>\n"
        f"<url>http://boinc.example.org/oldproj/download/{hier_dir(APP_FILE, FANOUT)}/{APP_FILE}</url>\n"
        f"<executable/>\n<file_signature>\n{signature}</file_signature>\n"
        f"<nbytes>{len(APP_BYTES)}</nbytes>\n<md5_cksum>{md5(APP_BYTES)}</md5_cksum>\n</file_info>\n"
        f"<app_version>\n<app_name>worker</app_name>\n<version_num>100</version_num>\n"
        f"<api_version>7.20.0</api_version>\n<file_ref>\n<file_name>{APP_FILE}</file_name>\n"
        f"<main_program/>\n</file_ref>\n</app_version>\n"
    )


def workunit_doc() -> str:
    return (
        f"<file_info>\n<name>{INPUT_FILE}</name>\n"
        f"<url>http://boinc.example.org/oldproj/download/{hier_dir(INPUT_FILE, FANOUT)}/{INPUT_FILE}</url>\n"
        f"<md5_cksum>{md5(INPUT_BYTES)}</md5_cksum>\n<nbytes>{len(INPUT_BYTES)}</nbytes>\n</file_info>\n"
        f"<workunit>\n<file_ref>\n<file_name>{INPUT_FILE}</file_name>\n<open_name>in</open_name>\n"
        f"</file_ref>\n<command_line>--fast</command_line>\n</workunit>\n"
    )


def result_doc(result_name: str) -> str:
    out = f"{result_name}_r1_0"
    return (
        f"<file_info>\n<name>{out}</name>\n<generated_locally/>\n<upload_when_present/>\n"
        f"<max_nbytes>{OUTPUT_MAX}</max_nbytes>\n"
        f"<url>http://boinc.example.org/oldproj_cgi/file_upload_handler</url>\n</file_info>\n"
        f"<result>\n<file_ref>\n<file_name>{out}</file_name>\n<open_name>out</open_name>\n</file_ref>\n</result>\n"
    )


@dataclass(frozen=True, slots=True)
class Volunteer:
    id: int
    email: str
    password: str
    authenticator: str


@dataclass(frozen=True, slots=True)
class Scenario:
    """What the standard BOINC project holds (times are Unix times of the real clock)."""

    now: float
    ada: Volunteer  # md5 password hash (BOINC before 2018)
    bob: Volunteer  # bcrypt of the md5 (PHP password_hash, BOINC since 2018)
    team_id: int
    host_id: int
    running_result: str  # in progress on the host
    running_output: str
    fresh_result: str  # unsent


ADA = Volunteer(1, "ada@example.org", "lovelace1843", "a" * 32)
BOB = Volunteer(2, "bob@example.org", "bobs secret", "b" * 32)


def fill_standard_project(db: BoincDb, keys: Keys) -> Scenario:
    """One app with a signed version, a team of two volunteers, a host with credit and
    statistics, a job in progress on it, an unsent job and a finished one, all three in a
    batch of Ada's, who may submit."""
    now = time.time()
    day = 86400.0
    db.add(
        "platform",
        id=1,
        name=PLATFORM,
        user_friendly_name="Linux on x86_64",
        create_time=int(now - 400 * day),
    )
    db.add("app", id=1, name="worker", user_friendly_name="Worker", create_time=int(now - 400 * day))
    db.add(
        "app_version",
        id=1,
        appid=1,
        platformid=1,
        version_num=100,
        xml_doc=app_version_doc(keys),
        create_time=int(now - 300 * day),
        pfc_n=500,
        pfc_avg=2.5,
        pfc_scale=1.0,
        expavg_credit=410.0,
        expavg_time=now - 3600,
    )
    db.add(
        "team",
        id=1,
        userid=ADA.id,
        name="Crunchers",
        url="crunchers.example.org",
        type=6,
        description="We crunch.",
        country="Iceland",
        create_time=int(now - 200 * day),
        total_credit=5000.0,
        expavg_credit=120.5,
        expavg_time=now - 2 * day,
    )
    for volunteer, stored, total, rac, age in (
        (ADA, passwd_hash(ADA.password, ADA.email), 3000.0, 100.25, day),
        (BOB, _php_bcrypt(passwd_hash(BOB.password, BOB.email)), 2000.0, 20.5, 3 * day),
    ):
        db.add(
            "user",
            id=volunteer.id,
            email_addr=volunteer.email,
            name=volunteer.email.split("@")[0].title(),
            authenticator=volunteer.authenticator,
            passwd_hash=stored,
            cross_project_id=f"{volunteer.id:032x}",
            country="Iceland",
            teamid=1,
            create_time=int(now - 100 * day),
            total_credit=total,
            expavg_credit=rac,
            expavg_time=now - age,
        )
    db.add(
        "host",
        id=7,
        userid=ADA.id,
        rpc_seqno=42,
        rpc_time=int(now - 3600),
        create_time=int(now - 90 * day),
        host_cpid="c" * 32,
        domain_name="adas-pc",
        os_name="Linux Debian",
        p_vendor="GenuineIntel",
        p_model="Intel(R) Core(TM) i5",
        total_credit=2500.0,
        expavg_credit=90.75,
        expavg_time=now - day,
        error_rate=0.02,
    )
    db.add(
        "host_app_version",
        host_id=7,
        app_version_id=1,
        pfc_n=30,
        pfc_avg=2.4,
        et_n=30,
        et_avg=1e-9,
        max_jobs_per_day=40,
        n_jobs_today=2,
        consecutive_valid=12,
    )
    db.add(
        "credit_user", userid=ADA.id, appid=1, njobs=20, total=3000.0, expavg=100.25, expavg_time=now - day
    )
    db.add("credit_team", teamid=1, appid=1, njobs=35, total=5000.0, expavg=120.5, expavg_time=now - 2 * day)
    db.add("user_submit", user_id=ADA.id, quota=2.0, manage_all=1, max_jobs_in_progress=100)
    db.add("user_submit_app", user_id=ADA.id, app_id=1, manage=1)
    db.add(
        "batch",
        id=5,
        user_id=ADA.id,
        app_id=1,
        name="sweep",
        state=1,
        njobs=3,
        fraction_done=0.25,
        create_time=int(now - 2 * day),
        est_completion_time=int(now + day),
        logical_start_time=now - 2 * day,
        logical_end_time=now + day,
        credit_canonical=12.5,
    )
    for wu_id, name, assimilated in ((11, "wu_running", 0), (12, "wu_fresh", 0), (13, "wu_done", 2)):
        db.add(
            "workunit",
            id=wu_id,
            batch=5,
            appid=1,
            name=name,
            xml_doc=workunit_doc(),
            create_time=int(now - day),
            transition_time=int(now + 7 * day),
            assimilate_state=assimilated,
        )
    db.add(
        "result",
        id=21,
        workunitid=11,
        appid=1,
        name="wu_running_0",
        server_state=4,
        hostid=7,
        userid=ADA.id,
        app_version_id=1,
        flops_estimate=3e9,  # the host's peak FLOPS for the version, set when BOINC sent it
        create_time=int(now - day),
        sent_time=int(now - 3600),
        report_deadline=int(now + 7 * day),
        xml_doc_in=result_doc("wu_running_0"),
    )
    db.add(
        "result",
        id=22,
        workunitid=12,
        appid=1,
        name="wu_fresh_0",
        create_time=int(now - day),
        xml_doc_in=result_doc("wu_fresh_0"),
    )
    db.add(
        "result",
        id=23,
        workunitid=13,
        appid=1,
        name="wu_done_0",
        server_state=5,
        outcome=1,
        create_time=int(now - 2 * day),
        xml_doc_in=result_doc("wu_done_0"),
    )
    return Scenario(
        now=now,
        ada=ADA,
        bob=BOB,
        team_id=1,
        host_id=7,
        running_result="wu_running_0",
        running_output="wu_running_0_r1_0",
        fresh_result="wu_fresh_0",
    )


def add_user(db: BoincDb, user_id: int, **values: object) -> int:
    """A valid BOINC user row (columns not given get plausible values)."""
    defaults = {
        "email_addr": f"v{user_id}@example.org",
        "name": f"Volunteer {user_id}",
        "authenticator": f"{user_id:032x}",
        "cross_project_id": f"{user_id:032x}",
        "passwd_hash": "",
        "create_time": 1_600_000_000,
    }
    return db.add("user", id=user_id, **{**defaults, **values})


def add_host(db: BoincDb, host_id: int, userid: int, **values: object) -> int:
    """A valid BOINC host row of ``userid``."""
    defaults = {"host_cpid": f"{host_id:032x}", "create_time": 1_600_000_000}
    return db.add("host", id=host_id, userid=userid, **{**defaults, **values})


def _php_bcrypt(digest: str) -> str:
    """What PHP's password_hash() stores: bcrypt with the $2y$ prefix."""
    return bcrypt.hashpw(digest.encode(), bcrypt.gensalt(10)).decode().replace("$2b$", "$2y$", 1)


@pytest.fixture
def standard(boinc_db: BoincDb, keys: Keys) -> Scenario:
    return fill_standard_project(boinc_db, keys)


def import_boinc(db: BoincDb, project_dir: Path, *args: str, slug: str = "oldproj") -> str:
    """Run the command; its output."""
    out = StringIO()
    call_command(
        "import_boinc",
        "--project",
        slug,
        "--mysql",
        db.url,
        "--project-dir",
        str(project_dir),
        *args,
        stdout=out,
    )
    return out.getvalue()
