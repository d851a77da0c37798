"""Input files (shared by workunits, e.g. locality's large files) and result output files."""

from __future__ import annotations

from django.db import models

from apps.core.choices import enum_choices
from apps.work.domain.states import FileDeleteState


class InputFile(models.Model):
    """A file in the project's download area, or at a remote URL, referenced by one or more
    workunits."""

    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="input_files")
    name = models.CharField(max_length=254)
    md5_cksum = models.CharField(max_length=32)
    nbytes = models.PositiveBigIntegerField()
    sticky = models.BooleanField(default=False, help_text="Kept on the host after use (locality scheduling)")
    report_on_rpc = models.BooleanField(default=False, help_text="Listed by the client in every request")
    no_delete = models.BooleanField(default=False, help_text="Never deleted by the file deleter")
    gzip = models.BooleanField(default=False, help_text="Also served as NAME.gz for gzipped download")
    remote_url = models.CharField(
        max_length=1000,
        blank=True,
        help_text="Where hosts download it when it is not in the download area (a remote input)",
    )
    create_time = models.DateTimeField(auto_now_add=True)
    file_delete_state = models.PositiveSmallIntegerField(
        choices=enum_choices(FileDeleteState), default=FileDeleteState.INIT
    )

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["project", "name"], name="inputfile_unique_name")]

    def __str__(self) -> str:
        return self.name

    @property
    def url(self) -> str:
        return self.remote_url or f"{self.project.download_url}/{self.name}"


class WorkunitFileRef(models.Model):
    """A workunit's use of an input file, under the name the app opens."""

    workunit = models.ForeignKey("work.Workunit", on_delete=models.CASCADE, related_name="file_refs")
    file = models.ForeignKey(InputFile, on_delete=models.PROTECT, related_name="refs")
    open_name = models.CharField(max_length=254, blank=True)
    copy_file = models.BooleanField(default=True)
    optional = models.BooleanField(default=False)
    ordinal = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["workunit_id", "ordinal"]
        constraints = [models.UniqueConstraint(fields=["workunit", "ordinal"], name="wufileref_unique")]

    def __str__(self) -> str:
        return f"{self.workunit_id}:{self.open_name or self.file_id}"


class OutputFile(models.Model):
    """An output file of a result: its upload limit, and what arrived."""

    # The unique (result, name) index serves lookups by result; no second index on result alone.
    result = models.ForeignKey(
        "work.Result", on_delete=models.CASCADE, related_name="output_files", db_index=False
    )
    name = models.CharField(max_length=254, help_text="Physical name (unique in the project)")
    open_name = models.CharField(max_length=254, blank=True)
    ordinal = models.PositiveSmallIntegerField(default=0)
    max_nbytes = models.PositiveBigIntegerField(default=1_000_000)
    copy_file = models.BooleanField(default=True)
    optional = models.BooleanField(default=False)
    gzip_when_done = models.BooleanField(default=False)
    upload = models.BooleanField(
        default=True, help_text="False: kept on the host for the next step of a work sequence"
    )
    sticky = models.BooleanField(
        default=False, help_text="Kept on the host after the result is reported (a sequence step's state)"
    )
    xml_signature = models.TextField(
        blank=True, help_text="Upload authorization: <name>…</name><max_nbytes>…</max_nbytes> signed"
    )
    nbytes = models.PositiveBigIntegerField(default=0, help_text="Bytes received so far")
    md5_cksum = models.CharField(max_length=32, blank=True, help_text="As reported by the client")
    uploaded = models.BooleanField(default=False, help_text="Complete: size and MD5 match the report")
    upload_time = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["result_id", "ordinal"]
        constraints = [models.UniqueConstraint(fields=["result", "name"], name="outputfile_unique")]
        indexes = [models.Index(fields=["name"], name="outputfile_name")]

    def __str__(self) -> str:
        return self.name
