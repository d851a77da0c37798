"""bench_replication in this test's database: every workunit of the measured batch validated
under each policy, quorum 2 running at least two results per workunit, the clock given back."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from apps.benchmarks.management.commands.bench_replication import POLICIES, format_report, run_role
from apps.core import clock

pytestmark = pytest.mark.django_db


@pytest.mark.slow
def test_a_small_run_validates_every_workunit_under_each_policy():
    real_now = clock.now
    figures = run_role(hosts=20, warmup=0, jobs=20, seed=3, flaky=0.0)
    assert clock.now is real_now
    policies = figures["policies"]
    assert list(policies) == list(POLICIES)
    assert [p["validated"] for p in policies.values()] == [20, 20, 20]
    assert policies["quorum 2"]["results_per_validated"] >= 2
    assert policies["quorum 2"]["wrong_accepted"] == 0
    report = "\n".join(format_report(figures))
    assert all(f"\n{policy} " in report for policy in POLICIES)


def test_too_few_hosts_are_refused():
    with pytest.raises(CommandError, match="--hosts and --jobs must be at least 20"):
        call_command("bench_replication", "--hosts", "5")
