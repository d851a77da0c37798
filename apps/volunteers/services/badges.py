"""The badge pass (BOINC's badge_assign): give and take back users' and teams' badges."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db import transaction

from apps.projects.models import Project
from apps.volunteers.domain.badges import (
    BadgeSpec,
    credit_badge_index,
    credit_badges,
    pct_badge_index,
    pct_badges,
    percentile_thresholds,
)
from apps.volunteers.models import Account, Badge, BadgeAward, Team


@dataclass(frozen=True, slots=True)
class BadgePass:
    """What a pass did: awards given, taken back, and kept."""

    given: int
    taken: int
    kept: int


def _badges(project: Project, kind: int, specs: tuple[BadgeSpec, ...]) -> list[Badge]:
    prefix = Badge.Kind(kind).label
    return [
        Badge.objects.get_or_create(
            project=project, kind=kind, name=f"{prefix}_{spec.name}", defaults={"title": spec.title}
        )[0]
        for spec in specs
    ]


def _wanted(project: Project, kind: int, rows: list[tuple[int, float, float]]) -> set[tuple[int, int]]:
    """(badge id, owner id) of every badge the rows (id, total, recent average) earn."""
    pct = _badges(project, kind, pct_badges())
    credit = _badges(project, kind, credit_badges())
    thresholds = percentile_thresholds([rac for _, _, rac in rows])
    wanted: set[tuple[int, int]] = set()
    for owner, total, rac in rows:
        i = pct_badge_index(rac, thresholds)
        if i is not None:
            wanted.add((pct[i].pk, owner))
        j = credit_badge_index(total)
        if j is not None:
            wanted.add((credit[j].pk, owner))
    return wanted


def _assign(project: Project, kind: int, owners: type[Account] | type[Team], now: datetime) -> BadgePass:
    owner_field = "account_id" if owners is Account else "team_id"
    candidates = owners.objects.filter(project=project, total_credit__gt=0)
    if owners is Account:
        candidates = candidates.filter(deleted_time__isnull=True)  # type: ignore[misc]  # accounts only
    rows = list(candidates.values_list("id", "total_credit", "expavg_credit"))
    wanted = _wanted(project, kind, rows)
    awards = BadgeAward.objects.filter(badge__project=project, badge__kind=kind)
    held = {(badge, owner): pk for pk, badge, owner in awards.values_list("id", "badge_id", owner_field)}
    gone = [pk for key, pk in held.items() if key not in wanted]
    kept = [pk for key, pk in held.items() if key in wanted]
    new = [
        BadgeAward(badge_id=badge, create_time=now, reassign_time=now, **{owner_field: owner})
        for badge, owner in wanted - held.keys()
    ]
    with transaction.atomic():
        BadgeAward.objects.filter(pk__in=gone).delete()
        BadgeAward.objects.filter(pk__in=kept).update(reassign_time=now)
        BadgeAward.objects.bulk_create(new, batch_size=1000)
    return BadgePass(given=len(new), taken=len(gone), kept=len(kept))


def badges_assign(*, project: Project, now: datetime) -> BadgePass:
    """One pass over the project's users, then its teams.

    1. Make the project's badges if missing (percentiles 1, 5, 25; credit levels).
    2. For users (deleted accounts left out) and teams with credit, find the recent
       average that reaches each percentile, and each one's highest badge of each family.
    3. Give the badges newly earned, take back those no longer earned, mark the rest as
       confirmed now.
    """
    users = _assign(project, Badge.Kind.USER, Account, now)
    teams = _assign(project, Badge.Kind.TEAM, Team, now)
    return BadgePass(
        given=users.given + teams.given, taken=users.taken + teams.taken, kept=users.kept + teams.kept
    )


def account_badges(account: Account) -> list[Badge]:
    return list(Badge.objects.filter(awards__account=account).order_by("name"))


def team_badges(team: Team) -> list[Badge]:
    return list(Badge.objects.filter(awards__team=team).order_by("name"))
