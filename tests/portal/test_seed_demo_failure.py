"""A demo seed that fails half-way writes nothing (kept apart from the modules whose tests
share one seeded demo)."""

from __future__ import annotations

import pytest

from apps.portal.demo import timeline
from apps.portal.demo.seed import demo_exists, demo_seed
from apps.projects.services import DaemonPass

pytestmark = pytest.mark.django_db


def test_a_seed_that_fails_half_way_leaves_no_demo_project(monkeypatch, tmp_path, now):
    monkeypatch.setattr(timeline, "workunits_assimilate", lambda **kw: DaemonPass(errors=1, message="boom"))
    with pytest.raises(timeline.DemoPastError):
        demo_seed(now=now, scratch=tmp_path)
    assert demo_exists() is False  # so `seed_demo --if-empty` (make run) seeds it next time
