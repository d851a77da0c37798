"""A daemon in a process of its own, on the database DATABASE_URL names, for the restart tests.

``python -m tests.backend.daemon_process seed DAEMON N`` makes N workunits waiting for that
daemon (the project ``restart``); ``loop DAEMON`` runs its passes every half second as Celery
beat would, closing a broken connection between passes as the worker does.

The assimilator's app gets ``gated_hook``: at the workunit named ``*-gate`` it writes
``$GATE_DIR/reached`` and waits for ``$GATE_DIR/open``, so a test can act while a batch is in
its hook.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import django

PROJECT = "restart"
logger = logging.getLogger("daemon_process")
BATCH = 400  # rows per pass: two of the transitioner's and validator's batches


def gated_hook(workunit: Any, canonical_result: Any, output_paths: list[Path]) -> str:
    from apps.work.services.assimilator import copy_outputs

    gate = Path(os.environ["GATE_DIR"])
    if workunit.name.endswith("-gate") and not (gate / "open").exists():
        (gate / "reached").touch()
        deadline = time.monotonic() + 120
        while not (gate / "open").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
    return copy_outputs(workunit, canonical_result, output_paths)


def seed(daemon: str, n: int) -> None:
    from apps.projects.models import Project
    from apps.projects.services import project_create
    from apps.work.domain.states import AssimilateState, FileDeleteState
    from apps.work.models import OutputFile, Result, Workunit
    from apps.work.services import InputSpec, workunits_transition, workunits_validate
    from tests.backend.conftest import make_host, make_wu, report, results_of, send
    from tests.factories import AppFactory, AppVersionFactory

    project = Project.objects.filter(slug=PROJECT).first() or project_create(slug=PROJECT, name="R").project
    app = AppFactory(
        project=project,
        min_quorum=2,
        target_nresults=2,
        assimilator="tests.backend.daemon_process.gated_hook",
    )
    version = AppVersionFactory(app=app)
    hosts = [make_host(project) for _ in range(4)]
    now = django.utils.timezone.now()
    long_ago = now - timedelta(days=30)
    inputs = Path(os.environ["GATE_DIR"]) / "inputs"
    inputs.mkdir(parents=True, exist_ok=True)
    wus = []
    for i in range(n):
        name = f"{daemon}-{i:05d}" + ("-gate" if i == 0 else "")
        if daemon == "file_deleter":
            path = inputs / f"{name}.in"
            path.write_bytes(b"input\n")
            wu = make_wu(project, app, now, name=name, inputs=(InputSpec(path=path),))
        else:
            wu = make_wu(project, app, now, name=name)
        wus.append(wu)
        for j, r in enumerate(results_of(wu)):
            if daemon == "transitioner":
                send(r, hosts[j], version, long_ago, delay=3600)  # its deadline long past
            else:
                send(r, hosts[j], version, long_ago)
                report(r, long_ago, output=b"same\n")
    if daemon == "validator":
        workunits_transition(project=project, now=now, limit=n)
    if daemon in ("assimilator", "file_deleter", "db_purge"):
        workunits_transition(project=project, now=now, limit=n)
        workunits_validate(project=project, now=now, limit=n)
    ids = [wu.id for wu in wus]
    if daemon == "assimilator":
        assert Workunit.objects.filter(id__in=ids, assimilate_state=AssimilateState.READY).count() == n
    if daemon == "file_deleter":
        Workunit.objects.filter(id__in=ids).update(file_delete_state=FileDeleteState.READY)
    if daemon == "db_purge":
        Workunit.objects.filter(id__in=ids).update(
            file_delete_state=FileDeleteState.DONE, create_time=long_ago, transition_time=None
        )
        Result.objects.filter(workunit_id__in=ids).update(received_time=long_ago)
        OutputFile.objects.filter(result__workunit_id__in=ids).update(uploaded=True)
        Project.objects.filter(id=project.id).update(purge_min_age_days=1)


def loop(daemon: str) -> None:
    logging.basicConfig(stream=sys.stdout, level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    from django.db import close_old_connections

    from apps.work.services.daemons import PassOptions, daemon_run

    while True:
        close_old_connections()
        try:
            outcome = daemon_run(daemon, slug=PROJECT, options=PassOptions(limit=BATCH))
            logger.info("%s: %s", daemon, outcome)
        except Exception as exc:
            logger.info("%s: %s: %s", daemon, type(exc).__name__, exc)
        time.sleep(0.5)


if __name__ == "__main__":
    django.setup()
    import django.utils.timezone

    command, name = sys.argv[1], sys.argv[2]
    if command == "seed":
        seed(name, int(sys.argv[3]))
    else:
        loop(name)
