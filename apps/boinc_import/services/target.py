"""The id ranges an import's tables take: whether a range is free, and the first free id."""

from __future__ import annotations

from django.db import models
from django.db.models import Max

from apps.boinc_import.queries import sequence_handed_out


def id_range_taken(model: type[models.Model], lo: int, hi: int) -> bool:
    return model._default_manager.filter(pk__gte=lo, pk__lte=hi).exists()


def next_free_id(model: type[models.Model]) -> int:
    """The first id above every id the table holds or its sequence has handed out."""
    highest = model._default_manager.aggregate(top=Max("pk"))["top"] or 0
    return max(highest, sequence_handed_out(model)) + 1
