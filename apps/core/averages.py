"""Store CreditNew's running averages (apps.core.domain.average) in model columns.

A model declares the columns once per statistic (``pfc_n``, ``pfc_avg``; the
variance kind adds ``_var`` and ``_q``) and an ``AverageColumns`` descriptor that
reads and writes them as one value object, so the update math exists only in the
domain type and every caller goes through it.
"""

from __future__ import annotations

from typing import Any

from django.db import models

from apps.core.domain.average import Average, AverageVar


def average_columns(prefix: str, *, with_var: bool = False) -> dict[str, models.Field]:
    """The concrete columns for one average; spread into a model with ``locals().update``."""
    fields: dict[str, models.Field] = {
        f"{prefix}_n": models.FloatField(default=0, help_text=f"{prefix}: number of samples"),
        f"{prefix}_avg": models.FloatField(default=0, help_text=f"{prefix}: average"),
    }
    if with_var:
        fields[f"{prefix}_var"] = models.FloatField(default=0, help_text=f"{prefix}: variance")
        fields[f"{prefix}_q"] = models.FloatField(default=0, help_text=f"{prefix}: running sum of squares")
    return fields


class AverageColumns:
    """Descriptor exposing ``<prefix>_*`` columns as an Average / AverageVar value."""

    def __init__(self, prefix: str, *, with_var: bool = False) -> None:
        self.prefix = prefix
        self.with_var = with_var

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        if instance is None:
            return self
        p = self.prefix
        if self.with_var:
            return AverageVar(
                n=getattr(instance, f"{p}_n"),
                avg=getattr(instance, f"{p}_avg"),
                var=getattr(instance, f"{p}_var"),
                q=getattr(instance, f"{p}_q"),
            )
        return Average(n=getattr(instance, f"{p}_n"), avg=getattr(instance, f"{p}_avg"))

    def __set__(self, instance: Any, value: Average | AverageVar) -> None:
        p = self.prefix
        setattr(instance, f"{p}_n", value.n)
        setattr(instance, f"{p}_avg", value.avg)
        if self.with_var:
            assert isinstance(value, AverageVar)
            setattr(instance, f"{p}_var", value.var)
            setattr(instance, f"{p}_q", value.q)

    def column_names(self) -> list[str]:
        names = [f"{self.prefix}_n", f"{self.prefix}_avg"]
        if self.with_var:
            names += [f"{self.prefix}_var", f"{self.prefix}_q"]
        return names
