"""The record of moving a BOINC project into Cobblestone: where it came from, how far each
table has got, and every row that was refused or changed on the way."""

from __future__ import annotations

from django.db import models


class BoincImport(models.Model):
    """A BOINC project imported (or being imported) into a Cobblestone project."""

    project = models.OneToOneField("projects.Project", on_delete=models.CASCADE, related_name="boinc_import")
    source = models.CharField(max_length=300, help_text="The BOINC database (host, port, name; no password)")
    project_dir = models.CharField(max_length=500, help_text="The BOINC project directory files came from")
    db_revision = models.PositiveIntegerField(
        null=True, blank=True, help_text="The project's db_revision file, when it had one"
    )
    started = models.DateTimeField()
    finished = models.DateTimeField(
        null=True, blank=True, help_text="When the last run completed every table"
    )

    class Meta:
        ordering = ["-started"]

    def __str__(self) -> str:
        return f"import of {self.source} into {self.project_id}"


class ImportTable(models.Model):
    """One BOINC table of an import: the id plan, the checkpoint, the counts.

    Rows are read in id order and each batch is written in the transaction that moves
    ``last_source_id`` past it, so a stopped run resumes after its last committed batch.
    Tables whose ids are kept or shifted record the shift (``id_offset``) and the highest
    source id the target range was reserved for.
    """

    boinc_import = models.ForeignKey(BoincImport, on_delete=models.CASCADE, related_name="tables")
    table = models.CharField(max_length=50)
    id_offset = models.BigIntegerField(default=0, help_text="Cobblestone id = BOINC id + this")
    reserved_max_id = models.BigIntegerField(
        default=0, help_text="Highest BOINC id the Cobblestone id range was reserved for"
    )
    last_source_id = models.BigIntegerField(default=0, help_text="Every row up to this BOINC id is done")
    imported = models.PositiveBigIntegerField(default=0)
    done = models.BooleanField(default=False)

    class Meta:
        ordering = ["boinc_import_id", "id"]
        constraints = [models.UniqueConstraint(fields=["boinc_import", "table"], name="importtable_unique")]

    def __str__(self) -> str:
        return f"{self.table} (up to id {self.last_source_id})"


class ImportIssue(models.Model):
    """A BOINC row that was refused (not imported), or imported with a value changed.

    A refused row is tried again by the next run (fix it in the BOINC database first);
    once it imports, its record goes.
    """

    boinc_import = models.ForeignKey(BoincImport, on_delete=models.CASCADE, related_name="issues")
    table = models.CharField(max_length=50)
    source_id = models.BigIntegerField(help_text="The row's id in the BOINC table (its first key column)")
    source_key = models.BigIntegerField(
        default=0, help_text="The second key column of tables keyed by two (host_app_version, credit_*)"
    )
    refused = models.BooleanField(help_text="Not imported; otherwise imported with the change described")
    reason = models.TextField()

    class Meta:
        ordering = ["boinc_import_id", "table", "source_id"]
        indexes = [models.Index(fields=["boinc_import", "table", "refused"], name="importissue_by_table")]

    def __str__(self) -> str:
        return f"{self.table} {self.source_id}: {self.reason}"
