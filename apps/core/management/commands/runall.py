"""Serve the portal, a Celery worker and Celery beat together; Ctrl-C stops them all."""

from __future__ import annotations

import signal
import subprocess
import time
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Run the web server (gunicorn), one Celery worker and Celery beat until interrupted."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--bind", default="127.0.0.1:8000")
        parser.add_argument("--web-workers", type=int, default=2)
        parser.add_argument("--concurrency", type=int, default=2, help="Celery worker processes")

    def handle(self, *args: Any, **opts: Any) -> None:
        bin_dir = settings.BASE_DIR / ".venv" / "bin"
        gunicorn = str(bin_dir / "gunicorn") if (bin_dir / "gunicorn").exists() else "gunicorn"
        celery = str(bin_dir / "celery") if (bin_dir / "celery").exists() else "celery"
        commands = {
            # The production configuration (metrics summed over the worker processes), with
            # this command's address and sizes.
            "web": [
                gunicorn,
                "-c",
                str(settings.BASE_DIR / "deploy" / "gunicorn.conf.py"),
                "--bind",
                opts["bind"],
                "--workers",
                str(opts["web_workers"]),
                "--threads",
                "4",
                "--access-logfile",
                "-",
                "--timeout",
                "120",
            ],
            "worker": [
                celery,
                "-A",
                "boincproj",
                "worker",
                "--loglevel",
                "INFO",
                "--concurrency",
                str(opts["concurrency"]),
                "--hostname",
                "worker@%h",
            ],
            "beat": [celery, "-A", "boincproj", "beat", "--loglevel", "INFO"],
        }
        procs = {name: subprocess.Popen(cmd, cwd=settings.BASE_DIR) for name, cmd in commands.items()}
        self.stdout.write(
            self.style.SUCCESS(f"Portal on http://{opts['bind']}/  (admin: /admin/)  Ctrl-C stops all.")
        )

        def stop(*_: Any) -> None:
            for proc in procs.values():
                if proc.poll() is None:
                    proc.send_signal(signal.SIGTERM)

        signal.signal(signal.SIGTERM, stop)
        try:
            while all(proc.poll() is None for proc in procs.values()):
                time.sleep(0.5)
            dead = [name for name, proc in procs.items() if proc.poll() is not None]
            self.stderr.write(f"{', '.join(dead)} stopped; stopping the rest.")
        except KeyboardInterrupt:
            self.stdout.write("Stopping...")
        finally:
            stop()
            deadline = time.monotonic() + 15
            for proc in procs.values():
                try:
                    proc.wait(timeout=max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    proc.kill()
