"""How much download traffic locality scheduling saved (for the admin dashboard)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Delivery:
    """A result sent to a host, with the size of its large input file."""

    host_id: int
    file_name: str
    nbytes: int


@dataclass(frozen=True, slots=True)
class TransferSavings:
    deliveries: int
    bytes_sent: int  # large-file bytes actually downloaded: first delivery per host/file
    baseline_bytes: int  # without locality: every result's large file downloaded
    files: int
    hosts: int

    @property
    def bytes_saved(self) -> int:
        return self.baseline_bytes - self.bytes_sent

    @property
    def ratio(self) -> float:
        """bytes_sent / baseline_bytes (1.0 = no saving); 1.0 when nothing was sent."""
        return self.bytes_sent / self.baseline_bytes if self.baseline_bytes else 1.0


def transfer_savings(deliveries: Iterable[Delivery]) -> TransferSavings:
    """Bytes sent with locality versus the no-locality baseline.

    The baseline sends each result to a random host, which with many hosts almost never
    already holds the file, so every delivery costs the full file. With locality a
    host downloads a file once; re-downloads after the host deleted it are not visible
    here, so ``bytes_sent`` is a lower bound.
    """
    seen: set[tuple[int, str]] = set()
    files: set[str] = set()
    hosts: set[int] = set()
    count = sent = baseline = 0
    for delivery in deliveries:
        if delivery.nbytes < 0:
            raise ValueError(f"negative size for {delivery.file_name!r}")
        count += 1
        baseline += delivery.nbytes
        files.add(delivery.file_name)
        hosts.add(delivery.host_id)
        key = (delivery.host_id, delivery.file_name)
        if key not in seen:
            seen.add(key)
            sent += delivery.nbytes
    return TransferSavings(
        deliveries=count, bytes_sent=sent, baseline_bytes=baseline, files=len(files), hosts=len(hosts)
    )


@dataclass(frozen=True, slots=True)
class FileDeliveries:
    """One large file's deliveries: the results sent with it and the distinct hosts that
    downloaded it for them (a GROUP BY row, so the database counts millions of deliveries)."""

    file_name: str
    nbytes: int
    deliveries: int
    hosts: int


def transfer_savings_per_file(rows: Iterable[FileDeliveries], *, hosts: int) -> TransferSavings:
    """``transfer_savings`` from per-file counts; ``hosts`` is the number of distinct hosts
    over all files. A file costs its size once per host that downloaded it, against once
    per delivery without locality."""
    files = count = sent = baseline = 0
    for row in rows:
        if row.nbytes < 0 or row.deliveries < 0 or not 0 <= row.hosts <= row.deliveries:
            raise ValueError(f"inconsistent counts for {row.file_name!r}")
        if row.deliveries == 0:
            continue
        files += 1
        count += row.deliveries
        baseline += row.deliveries * row.nbytes
        sent += row.hosts * row.nbytes
    return TransferSavings(
        deliveries=count, bytes_sent=sent, baseline_bytes=baseline, files=files, hosts=hosts
    )
