"""Static files in production: the pages name them through collectstatic's manifest.

With ``STATIC_MANIFEST`` on (the default when ``DEBUG`` is off) a page names each static
file by the content-hashed name that ``collectstatic`` records in STATIC_ROOT's manifest.
Django's storage fails the page when the manifest lacks a name (collectstatic never ran,
or not since the file was added): every page would be a 500. Here such a file is named by
its plain name instead, the page is served (unstyled until collectstatic runs) and the
process logs once what to run; ``check --deploy`` and /health/ report it too.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.staticfiles import finders
from django.contrib.staticfiles.storage import ManifestFilesMixin, StaticFilesStorage, staticfiles_storage
from django.core import checks
from whitenoise.storage import CompressedManifestStaticFilesStorage

logger = logging.getLogger(__name__)

COLLECTSTATIC = "manage.py collectstatic --noinput"
# What collectstatic skips unless told otherwise.
IGNORED = ["CVS", ".*", "*~"]


class CollectedStaticStorage(CompressedManifestStaticFilesStorage):
    """WhiteNoise's compressed manifest storage; a name missing from the manifest is served
    under its plain name rather than failing the page."""

    _reported = False

    def url(self, name: str | None, force: bool = False) -> str:
        try:
            return super().url(name, force)
        except ValueError:
            if not CollectedStaticStorage._reported:
                CollectedStaticStorage._reported = True
                logger.error(
                    "static file %s is not in collectstatic's manifest: pages name it unhashed "
                    "(and unstyled if it was never collected); run %s",
                    name,
                    COLLECTSTATIC,
                )
            return StaticFilesStorage.url(self, name)


def uncollected() -> str | None:
    """What collectstatic has not done yet, or None when the manifest names every static
    file (or the storage uses no manifest)."""
    storage: Any = staticfiles_storage
    if not isinstance(storage, ManifestFilesMixin):
        return None
    manifest = Path(settings.STATIC_ROOT) / storage.manifest_name
    if not manifest.is_file():
        return f"{manifest} is missing: collectstatic has not run"
    try:
        paths, _hash = storage.load_manifest()
    except ValueError as exc:  # not JSON, or another version's
        return f"{manifest} cannot be read ({exc})"
    missing = sorted(static_names() - set(paths))
    if missing:
        return f"{len(missing)} static file(s) not collected, first {missing[0]}"
    return None


def static_names() -> set[str]:
    """The names of every static file the finders see, as collectstatic would store them."""
    names = set()
    for finder in finders.get_finders():
        for path, source in finder.list(IGNORED):
            prefix = getattr(source, "prefix", None)
            names.add(f"{prefix}/{path}" if prefix else path)
    return names


@checks.register(checks.Tags.staticfiles, deploy=True)
def collectstatic_ran(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """``check --deploy``: the static files are collected."""
    problem = uncollected()
    if problem is None:
        return []
    return [
        checks.Error(
            f"{problem}; pages are served with unhashed static URLs.",
            hint=f"Run `{COLLECTSTATIC}`, then reload the web server.",
            id="ops.E001",
        )
    ]
