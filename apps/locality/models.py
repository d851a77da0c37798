"""Locality scheduling state (docs/locality.md) as database rows instead of trigger files."""

from __future__ import annotations

from django.db import models
from django.db.models import Q


class LocalityFile(models.Model):
    """A large input file shared by many workunits (FILENAME__* names), with its work markers.

    The flags replace BOINC's trigger directories: ``in_working_set`` is
    file_working_set/, ``no_work_available`` is no_work_available/, ``files_no_work``
    is files_no_work/, and pending ``NeedWork`` rows are need_work/.
    """

    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="locality_files")
    name = models.CharField(max_length=254)
    nbytes = models.PositiveBigIntegerField(default=0)
    input_file = models.ForeignKey(
        "work.InputFile", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    create_time = models.DateTimeField(auto_now_add=True)
    in_working_set = models.BooleanField(default=False)
    no_work_available = models.BooleanField(
        default=False, help_text="The generator cannot make more work for this file: skip the wait"
    )
    files_no_work = models.BooleanField(
        default=False, help_text="The scheduler found no sendable results (working-set manager drops it)"
    )
    no_work_since = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["project", "name"], name="localityfile_unique")]
        indexes = [models.Index(fields=["project", "in_working_set"], name="localityfile_working_set")]

    def __str__(self) -> str:
        return self.name


class HostFile(models.Model):
    """A large file a host holds (reported as a sticky file_info, or sent by the scheduler)."""

    host = models.ForeignKey("hosts.Host", on_delete=models.CASCADE, related_name="locality_files")
    file = models.ForeignKey(LocalityFile, on_delete=models.CASCADE, related_name="hosts")
    first_seen = models.DateTimeField()
    last_seen = models.DateTimeField()
    sent_by_scheduler = models.BooleanField(
        default=False, help_text="Delivered because the scheduler sent work"
    )
    delete_requested = models.BooleanField(default=False)
    downloads = models.PositiveIntegerField(
        default=0, help_text="Times the scheduler sent the file while the host did not report holding it"
    )

    class Meta:
        ordering = ["host_id", "file_id"]
        constraints = [models.UniqueConstraint(fields=["host", "file"], name="hostfile_unique")]

    def __str__(self) -> str:
        return f"{self.host_id}:{self.file_id}"


class NeedWork(models.Model):
    """A "need work for file X" signal for the on-demand work generator."""

    file = models.ForeignKey(LocalityFile, on_delete=models.CASCADE, related_name="need_work")
    requested_time = models.DateTimeField()
    requested_by_host = models.ForeignKey(
        "hosts.Host", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    handled_time = models.DateTimeField(null=True, blank=True)
    workunits_created = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-requested_time"]
        verbose_name = "need-work signal"
        indexes = [models.Index(fields=["file", "handled_time"], name="needwork_pending")]
        constraints = [
            # One pending signal per file: concurrent RPCs for the same file share it.
            models.UniqueConstraint(
                fields=["file"], condition=Q(handled_time__isnull=True), name="needwork_one_pending"
            )
        ]

    def __str__(self) -> str:
        return f"need work: {self.file}"
