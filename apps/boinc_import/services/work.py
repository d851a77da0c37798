"""Workunits not yet assimilated and all their results, with input and output files.

A client holding a task from the old server reports it here by name; the result row (and
its output files, for the upload) must be here, on the host that holds it. Input files
are placed in the download area so that the transitioner's new replicas can be fetched,
and outputs already uploaded to the old server in the upload area, for the validator.
"""

from __future__ import annotations

import os
from dataclasses import asdict, replace
from pathlib import Path

from apps.boinc_import.domain import (
    FINISHED_WORKUNIT_SQL,
    IdMap,
    InputRef,
    Mapped,
    OutputRef,
    Row,
    RowRefused,
    file_name_check,
    map_assignment,
    map_result,
    map_workunit,
    output_files,
    workunit_batch,
)
from apps.boinc_import.queries import canonical_results_set, rows_insert
from apps.boinc_import.services.engine import ImportRun, KeyedTable, project_rows, table_import
from apps.boinc_import.services.files import FileClash, boinc_file, file_copy, file_place, md5_of
from apps.boinc_import.services.source import TableQuery
from apps.protocol import ProtocolError, StoredDoc, parse_stored_doc
from apps.protocol.filenames import partial_upload_name
from apps.work.models import Assignment, InputFile, OutputFile, Result, Workunit, WorkunitFileRef
from apps.work.services.create import OutputSpec, WorkError
from apps.work.services.templates import load_output_template, outputs_from_template

WORKUNIT_COLUMNS = (
    "id, create_time, appid, name, xml_doc, batch, rsc_fpops_est, rsc_fpops_bound, rsc_memory_bound,"
    " rsc_disk_bound, rsc_bandwidth_bound, need_validate, canonical_credit, transition_time, delay_bound,"
    " error_mask, file_delete_state, assimilate_state, min_quorum, target_nresults, max_error_results,"
    " max_total_results, max_success_results, result_template_file, priority, app_version_id, hr_class,"
    " transitioner_flags, keywords"
)
RESULT_COLUMNS = (
    "r.id, r.create_time, r.workunitid, r.server_state, r.outcome, r.client_state, r.hostid, r.userid,"
    " r.report_deadline, r.sent_time, r.received_time, r.name, r.cpu_time, r.xml_doc_in, r.xml_doc_out,"
    " r.stderr_out, r.file_delete_state, r.validate_state, r.claimed_credit, r.granted_credit, r.appid,"
    " r.exit_status, r.priority, r.elapsed_time, r.flops_estimate, r.app_version_id, r.runtime_outlier,"
    " r.peak_working_set_size"
)
IN_PROGRESS_WORKUNITS = f"NOT (w.{FINISHED_WORKUNIT_SQL})"


def _doc(row: Row, column: str) -> StoredDoc:
    try:
        return parse_stored_doc(row[column])
    except ProtocolError as exc:
        raise RowRefused(f"{column}: {exc}") from None


def workunits_import(run: ImportRun) -> None:
    templates = ResultTemplates(run)

    def map_row(row: Row) -> Mapped:
        mapped = map_workunit(
            row, now=run.now_unix, apps=run.apps, versions=run.versions, doc=_doc(row, "xml_doc")
        )
        mapped.values["output_files"] = templates.output_files(str(row["result_template_file"] or ""))
        mapped.values["batch"] = workunit_batch(mapped.values["batch"], run.batches)
        return mapped

    inputs = InputFiles(run)

    def write(rows: list[tuple[Row, Mapped]]) -> None:
        rows_insert(
            Workunit,
            project_rows(run, rows, run.workunits),
        )
        inputs.write(rows)

    table_import(
        run,
        KeyedTable(
            table="workunit",
            query=TableQuery(
                select=WORKUNIT_COLUMNS, from_="workunit w", key="w.id", where=IN_PROGRESS_WORKUNITS
            ),
            map_row=map_row,
            write=write,
            model=Workunit,
            ids=run.workunits,
            check=inputs.check,
        ),
    )


class ResultTemplates:
    """The output files new results of a workunit get, from its result template file (read
    once per file); when that file is gone, from an existing result of such a workunit."""

    def __init__(self, run: ImportRun) -> None:
        self.run = run
        self.cache: dict[str, list[dict[str, object]] | str] = {}  # the specs, or why not

    def output_files(self, path: str) -> list[dict[str, object]]:
        if path not in self.cache:
            try:
                self.cache[path] = self._load(path)
            except RowRefused as exc:
                self.cache[path] = str(exc)
        found = self.cache[path]
        if isinstance(found, str):
            raise RowRefused(found)
        return found

    def _load(self, path: str) -> list[dict[str, object]]:
        try:
            specs = outputs_from_template(load_output_template(self.run.project_dir / path))
            return [asdict(spec) for spec in specs]
        except WorkError as exc:
            problem = str(exc)
        rows = self.run.source.rows(
            "SELECT r.xml_doc_in FROM result r JOIN workunit w ON w.id = r.workunitid"
            " WHERE w.result_template_file = %s LIMIT 1",
            [path],
        )
        try:
            outputs = output_files(parse_stored_doc(rows[0]["xml_doc_in"])) if rows else []
        except (ProtocolError, RowRefused):
            outputs = []
        if not outputs:
            raise RowRefused(f"result template {path!r}: {problem}, and no result shows its output files")
        self.run.warnings.append(
            f"result template {path!r}: {problem}; new results of its workunits get the output files "
            "of an existing result instead"
        )
        return [
            asdict(
                OutputSpec(
                    open_name=f.open_name,
                    max_nbytes=f.max_nbytes,
                    copy_file=f.copy_file,
                    optional=f.optional,
                    gzip_when_done=f.gzip_when_done,
                )
            )
            for f in outputs
        ]


class InputFiles:
    """Input files are shared by workunits: one InputFile row per name, placed once."""

    def __init__(self, run: ImportRun) -> None:
        self.run = run
        self.known: dict[str, tuple[int, str, int]] = {}  # name → (id, md5, nbytes) of stored rows
        self.placed: set[str] = set()

    def check(self, rows: list[tuple[Row, Mapped]]) -> dict[int, str]:
        """Refuse workunits naming a stored file with other contents; place new files."""
        self._load([f.name for _, m in rows for f in m.files])
        refused: dict[int, str] = {}
        seen: dict[str, InputRef] = {}
        for row, mapped in rows:
            for file in mapped.files:
                stored = self.known.get(file.name)
                first = seen.setdefault(file.name, file)
                if (stored and stored[1:] != (file.md5_cksum, file.nbytes)) or (
                    (first.md5_cksum, first.nbytes) != (file.md5_cksum, file.nbytes)
                ):
                    refused[row["id"]] = (
                        f"input file {file.name} is already imported with another size or MD5"
                    )
                    break
                self._place(file, mapped)
        return refused

    def _load(self, names: list[str]) -> None:
        wanted = [n for n in set(names) if n not in self.known]
        if not wanted or self.run.project.pk is None:
            return
        for start in range(0, len(wanted), 1000):
            for pk, name, md5, nbytes in InputFile.objects.filter(
                project=self.run.project, name__in=wanted[start : start + 1000]
            ).values_list("id", "name", "md5_cksum", "nbytes"):
                self.known[name] = (pk, md5, nbytes)

    def _place(self, file: InputRef, mapped: Mapped) -> None:
        if file.name in self.placed or file.name in self.known:
            return
        self.placed.add(file.name)
        path = boinc_file(
            self.run.project_dir / "download", file.name, fanout=self.run.fanout, urls=file.download_urls
        )
        if path is None:
            mapped.notes.append(
                f"input file {file.name} is not in the BOINC download area: new replicas of this job cannot be downloaded"
            )
            return
        if not self.run.dry_run:
            try:
                file_place(path, self.run.project.download_dir / file.name)
            except FileClash as exc:
                mapped.notes.append(str(exc))

    def write(self, rows: list[tuple[Row, Mapped]]) -> None:
        """The batch's new InputFile rows, then every workunit's references to its files."""
        new: dict[str, InputRef] = {}
        for _, mapped in rows:
            for file in mapped.files:
                if file.name not in self.known:
                    new.setdefault(file.name, file)
        rows_insert(
            InputFile,
            [
                {
                    "project_id": self.run.project.pk,
                    "name": f.name,
                    "md5_cksum": f.md5_cksum,
                    "nbytes": f.nbytes,
                    "sticky": f.sticky,
                    "no_delete": f.no_delete,
                    "gzip": f.gzip,
                    "create_time": self.run.now,
                }
                for f in new.values()
            ],
        )
        self._load(list(new))
        rows_insert(
            WorkunitFileRef,
            [
                {
                    "workunit_id": row["id"] + self.run.workunits.offset,
                    "file_id": self.known[f.name][0],
                    "open_name": f.open_name,
                    "copy_file": f.copy_file,
                    "optional": f.optional,
                    "ordinal": i,
                }
                for row, mapped in rows
                for i, f in enumerate(mapped.files)
            ],
        )


class ResultDocs:
    """A result's xml_doc_in is its app's result template with the result's name filled in,
    so the results of one app differ only by that name: each shape is read once (parsed and
    its output files checked) and the name put back into its output files."""

    PLACEHOLDER = "cobblestone-result-name"
    MAX_SHAPES = 1000

    def __init__(self) -> None:
        self.shapes: dict[str, list[OutputRef] | str] = {}  # the output files, or why not

    def outputs(self, row: Row) -> list[OutputRef]:
        if row["xml_doc_out"]:  # reported: the client's sizes and MD5s are per result
            return output_files(_doc(row, "xml_doc_in"), _doc(row, "xml_doc_out"))
        body, name = row["xml_doc_in"], str(row["name"] or "")
        text = (
            bytes(body).decode("utf-8", errors="replace")
            if isinstance(body, bytes | bytearray)
            else body or ""
        )
        if not name or self.PLACEHOLDER in text:
            return output_files(_doc(row, "xml_doc_in"))
        shape = text.replace(name, self.PLACEHOLDER)
        found = self.shapes.get(shape)
        if found is None:
            if len(self.shapes) >= self.MAX_SHAPES:
                self.shapes.clear()
            try:
                found = output_files(_doc({"xml_doc_in": shape}, "xml_doc_in"))
            except RowRefused as exc:
                found = str(exc)
            self.shapes[shape] = found
        if isinstance(found, str):
            raise RowRefused(found.replace(self.PLACEHOLDER, name))
        named = [replace(f, name=f.name.replace(self.PLACEHOLDER, name)) for f in found]
        for f in named:
            file_name_check(f.name)
        return named


def results_import(run: ImportRun) -> None:
    result_ids = IdMap()
    docs = ResultDocs()

    def map_row(row: Row) -> Mapped:
        return map_result(
            row,
            now=run.now_unix,
            workunits=run.workunits,
            hosts=run.hosts,
            users=run.users,
            apps=run.apps,
            versions=run.versions,
            outputs=docs.outputs(row),
        )

    uploads = Uploads(run)

    def write(rows: list[tuple[Row, Mapped]]) -> None:
        rows_insert(
            Result,
            project_rows(run, rows, result_ids),
        )
        rows_insert(
            OutputFile,
            [
                uploads.row(row["id"] + result_ids.offset, i, f)
                for row, m in rows
                for i, f in enumerate(m.files)
            ],
        )

    table_import(
        run,
        KeyedTable(
            table="result",
            query=TableQuery(
                select=RESULT_COLUMNS,
                from_="result r JOIN workunit w ON w.id = r.workunitid",
                key="r.id",
                where=IN_PROGRESS_WORKUNITS,
            ),
            map_row=map_row,
            write=write,
            model=Result,
            ids=result_ids,
            check=uploads.check,
            track=False,
        ),
    )
    _canonical_results(run, result_ids.offset)


class Uploads:
    """Outputs a client uploaded to the old server before the move.

    A reported result's file is received if it has the size and MD5 the client reported. A
    result in progress may hold a whole file or an interrupted upload (BOINC's handler grows
    the file under its final name), so it goes both where the validator reads it and where an
    interrupted upload resumes (a copy: the client appends to it): a client that finished
    uploading just reports, one that did not resumes, and its completed file replaces this one.
    """

    def __init__(self, run: ImportRun) -> None:
        self.run = run
        self.received: dict[str, tuple[int, str]] = {}  # name → (nbytes, md5)
        # One walk of the area instead of a look for every output file (most are not there).
        self.present = {
            name: Path(folder) / name
            for folder, _dirs, names in os.walk(run.project_dir / "upload")
            for name in names
        }

    def check(self, rows: list[tuple[Row, Mapped]]) -> dict[int, str]:
        for _, mapped in rows:
            for file in mapped.files:
                path = self.present.get(file.name)
                if path is not None:
                    self._place(path, file, mapped)
        return {}

    def _place(self, path: Path, file: OutputRef, mapped: Mapped) -> None:
        nbytes = path.stat().st_size
        if nbytes > file.max_nbytes:
            mapped.notes.append(f"uploaded file {file.name} is larger than its max_nbytes; left behind")
            return
        reported = bool(file.reported_md5)
        md5 = md5_of(path) if reported else ""
        if reported and (nbytes, md5) != (file.reported_nbytes, file.reported_md5.lower()):
            mapped.notes.append(f"uploaded file {file.name} is not what the client reported; left behind")
            return
        if not self.run.dry_run:
            area = self.run.project.upload_dir
            try:
                file_place(path, area / file.name)
                if not reported:
                    file_copy(path, area / partial_upload_name(file.name))
            except FileClash as exc:
                mapped.notes.append(str(exc))
                return
        if reported:
            self.received[file.name] = (nbytes, md5)

    def row(self, result_id: int, ordinal: int, file: OutputRef) -> dict[str, object]:
        received = self.received.pop(file.name, None)
        return {
            "result_id": result_id,
            "name": file.name,
            "open_name": file.open_name,
            "ordinal": ordinal,
            "max_nbytes": file.max_nbytes,
            "copy_file": file.copy_file,
            "optional": file.optional,
            "gzip_when_done": file.gzip_when_done,
            "upload": True,
            "sticky": file.sticky,
            "xml_signature": "",  # signed when the scheduler sends it (reply._upload_file_info)
            # Not received: nothing stored yet, and the MD5 the client reported, if it has.
            "nbytes": received[0] if received else 0,
            "md5_cksum": received[1] if received else file.reported_md5,
            "uploaded": received is not None,
            "upload_time": self.run.now if received else None,
        }


def _canonical_results(run: ImportRun, result_offset: int) -> None:
    """Workunits that had reached a quorum point at their canonical result, once both are in."""
    rows = run.source.rows(
        f"SELECT w.id, w.canonical_resultid FROM workunit w WHERE w.canonical_resultid <> 0 AND {IN_PROGRESS_WORKUNITS}"
    )
    without = (
        set(
            Workunit.objects.filter(project=run.project, canonical_result__isnull=True).values_list(
                "id", flat=True
            )
        )
        if run.project.pk is not None
        else {run.workunits.target(r["id"]) for r in rows}
    )
    pairs = []
    for r in rows:
        wu_id = run.workunits.target(r["id"])
        if wu_id is not None and wu_id in without:
            pairs.append((wu_id, r["canonical_resultid"] + result_offset))
    if not run.dry_run:
        canonical_results_set(pairs)
    stats = run.table_stats("canonical result")
    stats.read, stats.imported = len(rows), len(pairs)
    run.progress("canonical result", len(rows), len(rows))


def assignments_import(run: ImportRun) -> None:
    """Targeted and broadcast jobs of the workunits imported (one assignment a workunit)."""
    taken: set[int] = set()

    def check(rows: list[tuple[Row, Mapped]]) -> dict[int, str]:
        wanted = {m.values["workunit_id"] for _, m in rows} - taken
        if wanted and run.project.pk is not None:
            taken.update(
                Assignment.objects.filter(workunit_id__in=wanted).values_list("workunit_id", flat=True)
            )
        refused = {}
        for row, mapped in rows:
            wu_id = mapped.values["workunit_id"]
            if wu_id in taken:
                refused[row["id"]] = (
                    "its workunit already has an assignment (Cobblestone keeps one a workunit)"
                )
            taken.add(wu_id)
        return refused

    def write(rows: list[tuple[Row, Mapped]]) -> None:
        rows_insert(Assignment, [{**m.values, "project_id": run.project.pk} for _, m in rows])

    table_import(
        run,
        KeyedTable(
            table="assignment",
            query=TableQuery(
                select="a.id, a.create_time, a.target_id, a.target_type, a.multi, a.workunitid",
                from_="assignment a JOIN workunit w ON w.id = a.workunitid",
                key="a.id",
                where=IN_PROGRESS_WORKUNITS,
            ),
            map_row=lambda row: map_assignment(
                row,
                now=run.now_unix,
                workunits=run.workunits,
                hosts=run.hosts,
                users=run.users,
                teams=run.teams,
            ),
            write=write,
            check=check,
        ),
    )
