"""Claims of the batched daemons: short leases that free themselves when a pass fails.

The transitioner, the validator and the assimilator claim workunits in a statement that
commits at once, by writing a lease (a time not yet due) into the column that makes a
workunit due for them, then handle them in transactions of their own. Concurrent workers
skip what is claimed; the handling itself runs under row locks (transitioner, validator) or
writes only where the claim is still this worker's (assimilator), so a workunit is never
handled by two workers at once. A claim ends in one of four ways:

1. The pass handles the workunit: its write replaces the lease.
2. The pass fails and the database is there: its batch is tried again one workunit at a
   time (``batch_run``), so one failing workunit holds up only itself; it keeps its lease
   and is tried again when that runs out, so a workunit that always fails cannot come first
   in every pass and crowd the others out.
3. The pass loses its database connection (the server restarted, the backend was
   terminated): the workunits it had not handled are remembered by its process
   (``claims_abandon``) and released at the start of that daemon's next pass in the process
   (``claims_release``), as soon as the database answers again, each only where the lease
   this claim wrote is still there (a claim another worker made since is left alone).
4. The process dies (killed, out of memory, its machine gone): nobody is left to release the
   claims, and the lease, ``CLAIM_LEASE``, frees them.

The lease is short so that the fourth case costs little: 90 s, a few daemon periods. A pass
that holds claims longer than a batch takes renews them (the assimilator, whose hooks may
be slow): one statement for all it still holds, at most once per half lease
(``LeaseClock.renew_due``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Generic, TypeVar

from apps.core import clock
from apps.core.db import connection_lost
from apps.work.queries import workunits_transition_claims_release

logger = logging.getLogger(__name__)

CLAIM_LEASE = timedelta(seconds=90)
RENEW_AFTER = CLAIM_LEASE / 2

T = TypeVar("T")
R = TypeVar("R")


def lease_until(at: datetime) -> datetime:
    """The lease a claim made at ``at`` writes. The wall clock's microseconds make the value
    this claim's own, so a release or a write over the lease can tell it from another's."""
    return at + CLAIM_LEASE + timedelta(microseconds=clock.now().microsecond)


class LeaseClock:
    """A pass's ``now`` advanced by the time the pass has run, in whole seconds as BOINC's
    times (a pass shorter than a second writes the times of the ``now`` it was given), and
    when its claims were last leased."""

    def __init__(self, now: datetime, monotonic: Callable[[], float] = time.monotonic) -> None:
        self._now = now
        self._monotonic = monotonic
        self._began = monotonic()
        self.leased = now

    def __call__(self) -> datetime:
        return self._now + timedelta(seconds=int(self._monotonic() - self._began))

    def renew_due(self) -> datetime | None:
        """The time to lease the pass's claims from, if half a lease has passed since they
        were last leased; then they count as leased at that time."""
        at = self()
        if at - self.leased < RENEW_AFTER:
            return None
        self.leased = at
        return at


@dataclass(slots=True)
class Retried(Generic[T, R]):
    """What ``batch_run`` did: the results of the runs that committed, the items that failed
    on their own (left to their lease), and those not tried because the database was gone."""

    results: list[R] = field(default_factory=list)
    failed: list[T] = field(default_factory=list)
    abandoned: list[T] = field(default_factory=list)


def batch_run(
    daemon: str, items: Sequence[T], run: Callable[[Sequence[T]], R], name: Callable[[T], object]
) -> Retried[T, R]:
    """``run(items)`` in one go; if it raises, ``one_by_one``. ``run`` opens its own
    transaction, so a failure leaves nothing half done."""
    try:
        return Retried(results=[run(items)])
    except Exception:
        lost = connection_lost()
        if len(items) == 1:
            logger.exception("%s: %s failed", daemon, name(items[0]))
            return Retried(failed=[] if lost else list(items), abandoned=list(items) if lost else [])
        logger.warning("%s: a batch of %d failed; trying them one by one", daemon, len(items), exc_info=True)
    return one_by_one(daemon, items, run, name)


def one_by_one(
    daemon: str, items: Sequence[T], run: Callable[[Sequence[T]], R], name: Callable[[T], object]
) -> Retried[T, R]:
    """``run([item])`` for each item. Once the database connection is lost and cannot be
    opened again, the rest are abandoned rather than each failing in turn."""
    retried: Retried[T, R] = Retried()
    for i, item in enumerate(items):
        try:
            retried.results.append(run([item]))
        except Exception:
            logger.exception("%s: %s failed", daemon, name(item))
            if connection_lost():
                retried.abandoned += items[i:]
                break
            retried.failed.append(item)
    return retried


_abandoned: dict[str, list[Any]] = {}
_abandoned_lock = threading.Lock()


def claims_abandon(daemon: str, claims: Iterable[Any]) -> None:
    """Remember claims a pass of ``daemon`` could not finish for its connection was lost."""
    claims = list(claims)
    if claims:
        with _abandoned_lock:
            _abandoned.setdefault(daemon, []).extend(claims)
        logger.warning("%s: %d claim(s) to release at the next pass", daemon, len(claims))


def claims_release(daemon: str, release: Callable[[list[Any]], object]) -> int:
    """Release the claims this process abandoned in passes of ``daemon`` (``release`` writes
    them, in one statement, where their lease is still there); how many it tried. If the
    database is still away they are kept for the next pass and the error raised."""
    with _abandoned_lock:
        claims = _abandoned.pop(daemon, [])
    if not claims:
        return 0
    try:
        release(claims)
    except BaseException:
        with _abandoned_lock:
            _abandoned[daemon] = claims + _abandoned.get(daemon, [])
        raise
    logger.info("%s: released %d claim(s) of an interrupted pass", daemon, len(claims))
    return len(claims)


@dataclass(frozen=True, slots=True)
class TimeClaim:
    """A claim written into a workunit's transition_time: the lease, and the time it replaced."""

    workunit_id: int
    lease: datetime
    old: datetime | None


def transition_claims_release(claims: Sequence[TimeClaim], *, need_validate: bool = False) -> None:
    """Give back the transition times of claims whose lease is still there, in one statement
    (``need_validate``: flag them for the validator again, as its claim had cleared it). A
    workunit whose time was left as it was (already due) is flagged too: nobody has had it."""
    workunits_transition_claims_release(
        [(c.workunit_id, c.lease, c.old) for c in claims], need_validate=need_validate
    )


_failed_alone: list[FailedAlone] = []


class FailedAlone:
    """Rows a daemon without claims (the file deleter, db_purge) failed to handle on their
    own, which its process leaves out of its batches for a lease's length: the rows stay
    what they were, and without this one that always fails would come first in every batch
    and make each one fail and go one row at a time."""

    def __init__(self) -> None:
        self._until: dict[int, float] = {}
        self._lock = threading.Lock()
        _failed_alone.append(self)

    def add(self, ids: Iterable[int]) -> None:
        until = time.monotonic() + CLAIM_LEASE.total_seconds()
        with self._lock:
            self._until.update(dict.fromkeys(ids, until))

    def ids(self) -> list[int]:
        """The rows to leave out now."""
        now = time.monotonic()
        with self._lock:
            self._until = {i: t for i, t in self._until.items() if t > now}
            return sorted(self._until)


RowsRun = Callable[[Sequence[int] | None, list[int], list[int]], R]


def rows_batch_run(daemon: str, failed: FailedAlone, run: RowsRun[R]) -> Retried[int, R]:
    """A batch of a daemon without claims: ``run(only, skip, taken)`` picks its rows itself
    (``only``: just these ids; ``skip``: leave these out; ``taken``: it appends the ids it
    picked) in a transaction of its own. If it raises, the rows it had picked are run one at
    a time; those that fail alone are left out of this process's batches for a while."""
    taken: list[int] = []
    try:
        return Retried(results=[run(None, failed.ids(), taken)])
    except Exception:
        connection_lost()
        if not taken:
            raise
        logger.warning("%s: a batch of %d failed; trying them one by one", daemon, len(taken), exc_info=True)
    retried = one_by_one(daemon, taken, lambda ids: run(ids, [], []), lambda i: f"row {i}")
    failed.add(retried.failed)
    return retried


def claims_forget() -> None:
    """Forget the claims to release and the rows left out: for a process that goes on with
    another database (the tests)."""
    with _abandoned_lock:
        _abandoned.clear()
    for failed in _failed_alone:
        with failed._lock:
            failed._until.clear()
