"""On-demand work generators (docs/locality.md): make workunits for a file when hosts holding it need work.

A project names its generator in ``Project.locality_work_generator`` (a dotted path).
The ``locality.generate_work`` Celery task calls it, inside a transaction that holds the
file's row lock, as ``generator(project=..., file=..., now=...)``; it returns how many
workunits it created and whether it can ever make more for the file. Generators create
work through ``apps.work.services.workunits_create``, which also creates the results,
so they are sendable as soon as the transaction commits.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from apps.projects.models import Project
from apps.work.domain.locality_names import workunit_name
from apps.work.models import Workunit
from apps.work.services import InputSpec, JobSpec, OutputSpec, workunits_create

if TYPE_CHECKING:
    from apps.locality.models import LocalityFile

# The example generator's knobs: workunits per signal, and per file in all.
EXAMPLE_BATCH = 4
EXAMPLE_MAX_WORKUNITS_PER_FILE = 100


@dataclass(frozen=True, slots=True)
class GeneratedWork:
    created: int
    exhausted: bool = False  # no more workunits can be made for the file


class WorkGenerator(Protocol):
    def __call__(self, *, project: Project, file: LocalityFile, now: datetime) -> GeneratedWork: ...


def _job_like(template: Workunit, name: str) -> JobSpec:
    """A job with the template's app, inputs (the same large file) and bounds."""
    refs = template.file_refs.select_related("file").order_by("ordinal")
    known = {f.name for f in fields(OutputSpec)}
    return JobSpec(
        name=name,
        inputs=tuple(
            InputSpec(name=ref.file.name, open_name=ref.open_name, copy_file=ref.copy_file) for ref in refs
        ),
        outputs=tuple(
            OutputSpec(**{k: v for k, v in spec.items() if k in known}) for spec in template.output_files
        )
        or (OutputSpec(),),
        command_line=template.command_line,
        rsc_fpops_est=template.rsc_fpops_est,
        rsc_fpops_bound=template.rsc_fpops_bound,
        rsc_memory_bound=template.rsc_memory_bound,
        rsc_disk_bound=template.rsc_disk_bound,
        delay_bound=template.delay_bound,
        min_quorum=template.min_quorum,
        target_nresults=template.target_nresults,
        max_error_results=template.max_error_results,
        max_total_results=template.max_total_results,
        max_success_results=template.max_success_results,
        priority=template.priority,
    )


def example_work_generator(
    *,
    project: Project,
    file: LocalityFile,
    now: datetime,
    batch: int | None = None,
    max_per_file: int | None = None,
) -> GeneratedWork:
    """Make ``batch`` more workunits ``FILENAME__<n>`` like the file's latest one.

    A stand-in for a project's real generator (Einstein@home's searched the next
    frequency band of the data file): it copies the newest workunit of the file, so
    the large file is the same and nothing new has to be staged. After
    ``max_per_file`` workunits it reports the file exhausted.
    """
    batch = EXAMPLE_BATCH if batch is None else batch
    max_per_file = EXAMPLE_MAX_WORKUNITS_PER_FILE if max_per_file is None else max_per_file
    existing = Workunit.objects.filter(project=project, locality_file_name=file.name)
    template = existing.select_related("app").order_by("-id").first()
    if template is None:
        return GeneratedWork(created=0)  # nothing to copy: the project must seed the first workunit
    total = existing.count()
    room = min(batch, max_per_file - total)
    if room <= 0:
        return GeneratedWork(created=0, exhausted=True)
    taken = set(existing.values_list("name", flat=True))
    names: list[str] = []
    n = total
    while len(names) < room:
        candidate = workunit_name(file.name, str(n))
        if candidate not in taken:
            names.append(candidate)
        n += 1
    workunits_create(
        project=project, app=template.app, jobs=[_job_like(template, name) for name in names], now=now
    )
    return GeneratedWork(created=len(names), exhausted=total + len(names) >= max_per_file)
