from __future__ import annotations

import pytest

from apps.locality.domain.savings import Delivery, transfer_savings


def test_each_file_counts_once_per_host() -> None:
    savings = transfer_savings(
        [
            Delivery(host_id=1, file_name="f1", nbytes=100),
            Delivery(host_id=1, file_name="f1", nbytes=100),
            Delivery(host_id=2, file_name="f1", nbytes=100),
            Delivery(host_id=1, file_name="f2", nbytes=50),
            Delivery(host_id=1, file_name="f2", nbytes=50),
        ]
    )
    assert savings.deliveries == 5
    assert savings.bytes_sent == 250
    assert savings.baseline_bytes == 400
    assert savings.bytes_saved == 150
    assert savings.ratio == 250 / 400
    assert (savings.files, savings.hosts) == (2, 2)


def test_no_deliveries_means_no_saving() -> None:
    savings = transfer_savings([])
    assert (savings.bytes_sent, savings.baseline_bytes, savings.ratio) == (0, 0, 1.0)


def test_negative_size_is_rejected() -> None:
    with pytest.raises(ValueError, match="negative size"):
        transfer_savings([Delivery(host_id=1, file_name="f", nbytes=-1)])
