"""bench_validators in-process: each validator kind validates every workunit it is given."""

from __future__ import annotations

import pytest

from apps.benchmarks.management.commands.bench_validators import KINDS, format_report, run_role

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("kind", KINDS)
def test_each_validator_kind_validates_every_workunit(kind, settings, tmp_path):
    settings.COBBLESTONE_DATA_DIR = str(tmp_path)
    figures = run_role(kind=kind, hosts=4, validations=3, batch=10, seed=1)
    assert (figures["canonical"], figures["errors"]) == (3, 0)
    assert format_report([figures], 4, 10)[1].endswith("OK")
