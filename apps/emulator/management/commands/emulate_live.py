"""Run emulated hosts against a running Cobblestone server over HTTP.

    python manage.py emulate_live --url http://127.0.0.1:8000/demo/ --hosts 50 --hours 3
        [--speedup 1200] [--policy rec|v6-gpu|v4|mixed] [--no-uploads]
        [--authenticator KEY] [--add-jobs N]

Each host gets an account through the project's ``create_account.php`` (as the BOINC
Manager makes one), unless ``--authenticator`` gives one account for all. ``--add-jobs``
first adds that many jobs to the project, when this command shares the server's database
(the demo project has only 60). Exits with status 1 if any protocol error happened or a
reported result was not acknowledged.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from django.core.management.base import BaseCommand, CommandError

from apps.emulator.live import (
    HttpSession,
    LiveConfig,
    LiveError,
    account_key,
    format_summary,
    run_live,
    varied_hardware,
)


class Command(BaseCommand):
    help = "Run N emulated BOINC hosts against a Cobblestone server (live mode)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--url", required=True, help="the project's master URL, e.g. http://127.0.0.1:8000/demo/"
        )
        parser.add_argument("--hosts", type=int, default=20)
        parser.add_argument("--hours", type=float, default=3.0, help="simulated hours")
        parser.add_argument("--speedup", type=float, default=1200.0, help="simulated seconds per real second")
        parser.add_argument("--policy", default="mixed", choices=["rec", "v6-gpu", "v4", "mixed"])
        parser.add_argument("--no-uploads", action="store_true", help="do not upload output files")
        parser.add_argument("--authenticator", default="", help="one account key for every host")
        parser.add_argument(
            "--add-jobs", type=int, default=0, help="first add this many jobs (same database)"
        )
        parser.add_argument("--seed", type=int, default=1)

    def handle(self, *args: Any, **opts: Any) -> None:
        url = opts["url"].rstrip("/") + "/"
        if opts["add_jobs"]:
            self._add_jobs(url, opts["add_jobs"])
        keys = self._accounts(url, opts["hosts"], opts["authenticator"])
        config = LiveConfig(
            master_url=url,
            hardware=tuple(varied_hardware(opts["hosts"], seed=opts["seed"])),
            authenticators=keys,
            policy=opts["policy"],
            sim_hours=opts["hours"],
            speedup=opts["speedup"],
            max_seconds=max(opts["hours"] * 3600 / opts["speedup"] * 10, 600.0),
            uploads=not opts["no_uploads"],
            seed=opts["seed"],
        )
        gpus = sum(1 for h in config.hardware if h.ngpus)
        self.stdout.write(
            f"{opts['hosts']} hosts ({gpus} with NVIDIA GPUs), policy {opts['policy']}, "
            f"{opts['hours']:g} simulated hours at {opts['speedup']:g}x against {url}"
        )
        summary = run_live(config)
        self.stdout.write(format_summary(summary))
        if not summary.ok:
            raise CommandError("live run had errors or unacknowledged results")
        self.stdout.write(self.style.SUCCESS("No protocol error; every reported result was acknowledged."))

    def _accounts(self, url: str, count: int, shared: str) -> tuple[str, ...]:
        if shared:
            return (shared,) * count
        session = HttpSession(timeout=30)
        try:
            return tuple(
                account_key(
                    session,
                    url,
                    email=f"emulated-host-{i:04d}@emulator.example.com",
                    password="emulated-host-password",
                    user_name=f"Emulated host {i}",
                )
                for i in range(count)
            )
        except LiveError as exc:
            raise CommandError(f"{exc} (use --authenticator if account creation is disabled)") from exc
        finally:
            session.close()

    def _add_jobs(self, url: str, count: int) -> None:
        from apps.emulator.services import project_jobs_add
        from apps.projects.models import Project

        slug = urlsplit(url).path.strip("/").split("/")[-1]
        project = Project.objects.filter(slug=slug).first()
        if project is None:
            raise CommandError(f"--add-jobs: no project {slug!r} in this database")
        added = project_jobs_add(project=project, njobs=count, prefix=f"live_{project.workunits.count()}")
        self.stdout.write(f"Added {added} jobs to {slug}.")
