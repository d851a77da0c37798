"""server_status.php?xml=1 rounds per-app runtimes up to hundredths of an hour, as BOINC's
``ceil(x/3600*100)/100``: a task of a second or two is 0.01 h, not 0."""

from __future__ import annotations

from datetime import timedelta

import pytest
from lxml import etree

from apps.core import clock
from apps.work.domain.states import Outcome, ServerState, ValidateState
from tests.factories import AppFactory, ProjectFactory, ResultFactory

pytestmark = pytest.mark.django_db


def xml_runtimes(client, elapsed: list[float]) -> tuple[float, float, float]:
    app = AppFactory(project=ProjectFactory(slug="rt"), name="quick")
    for seconds in elapsed:
        ResultFactory(
            workunit__app=app,
            server_state=ServerState.OVER,
            outcome=Outcome.SUCCESS,
            validate_state=ValidateState.VALID,
            received_time=clock.now() - timedelta(hours=1),
            elapsed_time=seconds,
        )
    root = etree.fromstring(client.get("/rt/server_status.php?xml=1").content)
    [row] = root.find("database_file_states").find("tasks_by_app")
    return tuple(float(row.findtext(tag)) for tag in ("avg_runtime", "min_runtime", "max_runtime"))


def test_seconds_long_tasks_round_up_to_a_hundredth_of_an_hour(client):
    assert xml_runtimes(client, [1.1, 1.5]) == (0.01, 0.01, 0.01)


def test_runtimes_round_up_not_to_nearest(client):
    # 37 s is 0.0103 h: BOINC shows 0.02, rounding to nearest would show 0.01.
    assert xml_runtimes(client, [37.0]) == (0.02, 0.02, 0.02)


def test_an_exact_hundredth_stays_as_it_is(client):
    assert xml_runtimes(client, [252.0]) == (0.07, 0.07, 0.07)
