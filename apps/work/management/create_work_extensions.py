"""Options that apps built on work add to ``create_work``, registered from their AppConfig.ready().

work sits below those apps in the import layers, so its command never imports them: an app
adds its options with ``create_work_extend``, and when a run gives them, the app's ``create``
makes the jobs instead of the plain workunits. The sequences app adds ``--sequence``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from apps.applications.models import App
from apps.projects.models import Project


@dataclass(frozen=True, slots=True)
class CreateWorkExtension:
    """``add_arguments`` adds the options; ``wanted`` tells from the parsed options whether a run
    is the extension's; ``create`` then makes its jobs and returns the line to print (it raises
    CommandError or WorkError on bad input)."""

    name: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    wanted: Callable[[dict[str, Any]], bool]
    create: Callable[[Project, App, dict[str, Any]], str]


_extensions: dict[str, CreateWorkExtension] = {}


def create_work_extend(extension: CreateWorkExtension) -> None:
    """Add ``extension`` to create_work (once by name: ready() may run again)."""
    _extensions[extension.name] = extension


def create_work_extensions() -> tuple[CreateWorkExtension, ...]:
    return tuple(_extensions.values())
