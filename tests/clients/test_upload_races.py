"""Many uploaders of one output file at once (a cloned client, or a hostile one holding the
file's certificate): the first completed upload wins, the database row and the stored file
always agree. Threads share a process; processes (forked) share only the disk and database."""

from __future__ import annotations

import hashlib
import multiprocessing
import threading
from collections.abc import Callable

import pytest
from django.db import connections
from django.test import Client

from apps.protocol import UploadStatus
from apps.scheduler.transfer import lock_path, partial_path
from tests.clients.conftest import post_upload, upload_body

pytestmark = pytest.mark.django_db(transaction=True)

UPLOADERS = 8
SIZE = 90_000  # under the output's max_nbytes


def content(i: int) -> bytes:
    return (f"uploader {i} ".encode() * SIZE)[:SIZE]


def upload_until_answered(project, body: bytes) -> tuple[int, str | None]:
    """Post until the answer is not "try later" (what the client does); (status, message)."""
    client = Client()
    for _ in range(500):
        reply = post_upload(client, project, body).reply
        if reply.status != UploadStatus.TRANSIENT:
            return int(reply.status), reply.message
    raise AssertionError("still told to try later after 500 attempts")


def run_threads(target: Callable[[int], tuple[int, str | None]]) -> list[tuple[int, str | None]]:
    answers: list[tuple[int, str | None]] = [(99, None)] * UPLOADERS
    start = threading.Barrier(UPLOADERS)

    def run(i: int) -> None:
        start.wait()
        try:
            answers[i] = target(i)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(UPLOADERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return answers


def run_processes(target: Callable[[int], tuple[int, str | None]]) -> list[tuple[int, str | None]]:
    context = multiprocessing.get_context("fork")
    answers = context.Queue()
    start = context.Barrier(UPLOADERS)

    def run(i: int) -> None:
        start.wait()
        try:
            answers.put((i, target(i)))
        except BaseException as exc:  # reported to the test
            answers.put((i, (98, repr(exc))))
        finally:
            connections.close_all()

    connections.close_all()  # each process opens its own
    processes = [context.Process(target=run, args=(i,)) for i in range(UPLOADERS)]
    for process in processes:
        process.start()
    got = dict(answers.get(timeout=300) for _ in processes)
    for process in processes:
        process.join(timeout=60)
    return [got[i] for i in range(UPLOADERS)]


def assert_row_and_file_agree(project, output) -> bytes:
    output.refresh_from_db()
    stored = (project.upload_dir / output.name).read_bytes()
    assert output.uploaded is True
    assert (output.nbytes, output.md5_cksum) == (len(stored), hashlib.md5(stored).hexdigest())
    assert not partial_path(project, output.name).exists()
    assert not lock_path(project, output.name).exists()
    return stored


@pytest.mark.parametrize("run", [run_threads, run_processes], ids=["threads", "processes"])
def test_uploads_of_other_bytes_one_wins_the_rest_are_refused(project, output, run):
    bodies = [upload_body(output, content(i)) for i in range(UPLOADERS)]
    answers = run(lambda i: upload_until_answered(project, bodies[i]))

    winners = [i for i, (status, _) in enumerate(answers) if status == UploadStatus.OK]
    assert len(winners) == 1, answers
    refused = [message for status, message in answers if status == UploadStatus.PERMANENT]
    assert len(refused) == UPLOADERS - 1, answers
    assert all("already uploaded with other contents" in (m or "") for m in refused)
    assert assert_row_and_file_agree(project, output) == content(winners[0])


@pytest.mark.parametrize("run", [run_threads, run_processes], ids=["threads", "processes"])
def test_uploads_of_the_same_bytes_one_stores_the_rest_are_told_it_is_stored(project, output, run):
    body = upload_body(output, content(0))
    answers = run(lambda i: upload_until_answered(project, body))

    assert [status for status, _ in answers] == [UploadStatus.OK] * UPLOADERS, answers
    assert sorted(message or "" for _, message in answers) == [""] + ["Already received"] * (UPLOADERS - 1)
    assert assert_row_and_file_agree(project, output) == content(0)


def test_a_stored_file_is_never_written_by_a_late_uploader(client, project, output):
    assert post_upload(client, project, upload_body(output, content(0))).reply.status == UploadStatus.OK
    late = post_upload(client, project, upload_body(output, content(1)[:5000], whole=content(1)))
    assert late.reply.status == UploadStatus.PERMANENT
    assert assert_row_and_file_agree(project, output) == content(0)
