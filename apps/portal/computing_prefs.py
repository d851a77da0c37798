"""The computing (global) preferences form: BOINC's prefs.inc, field by field, with its
words, units and ranges. Values are shown in the units people use (KB/s, minutes) and
stored in the client's (bytes per second); an optional limit left blank is 0, "no limit".
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

from django import forms

from apps.protocol.global_prefs import ComputingPrefs

HOUR_CHOICES = [("", "any time"), *((str(h), f"{h}:00") for h in range(24))]


@dataclass(frozen=True, slots=True)
class PrefField:
    """One line of the form: a boolean, a number, an optional number (blank: no limit), a
    pair of numbers (``tag2``: "MB every N days") or a range of hours (``tag2``: the end)."""

    tag: str
    label: str
    help: str
    kind: str  # "bool", "num", "opt", "pair", "hours"
    unit: str = ""
    lo: float = 0.0
    hi: float = 9999999.0
    scale: float = 1.0  # stored value = shown value × scale
    invert: bool = False  # the box says "suspend", the preference "run"
    tag2: str = ""
    unit2: str = ""


GROUPS: tuple[tuple[str, tuple[PrefField, ...]], ...] = (
    (
        "When the computer is in use",
        (
            PrefField(
                "idle_time_to_run",
                "'In use' means mouse or keyboard input in the last",
                "When the computer counts as in use.",
                "num",
                "minutes",
                1,
                9999,
            ),
            PrefField(
                "run_if_user_active",
                "Suspend all computing",
                "Suspend computing and file transfers while you use the computer.",
                "bool",
                invert=True,
            ),
            PrefField(
                "run_gpu_if_user_active",
                "Suspend GPU computing",
                "Suspend GPU computing while you use the computer.",
                "bool",
                invert=True,
            ),
            PrefField(
                "max_ncpus_pct",
                "Use at most",
                "Keep some CPUs free for other programs: 75 % of 8 cores uses 6.",
                "num",
                "% of the CPUs",
                1,
                100,
            ),
            PrefField(
                "cpu_usage_limit",
                "Use at most",
                "Compute, then pause, to run cooler: 75 % computes 3 seconds and waits 1.",
                "num",
                "% of CPU time",
                1,
                100,
            ),
            PrefField(
                "suspend_cpu_usage",
                "Suspend when non-BOINC CPU usage is above",
                "Suspend while other programs keep the computer busy.",
                "opt",
                "%",
                0,
                100,
            ),
            PrefField(
                "ram_max_used_busy_pct",
                "Use at most",
                "Limit BOINC's memory while you use the computer.",
                "num",
                "% of memory",
                1,
                100,
            ),
        ),
    ),
    (
        "When the computer is not in use",
        (
            PrefField(
                "niu_max_ncpus_pct",
                "Use at most",
                "Blank: as when in use (BOINC 7.20.3 and later).",
                "opt",
                "% of the CPUs",
                0,
                100,
            ),
            PrefField(
                "niu_cpu_usage_limit",
                "Use at most",
                "Blank: as when in use (BOINC 7.20.3 and later).",
                "opt",
                "% of CPU time",
                0,
                100,
            ),
            PrefField(
                "niu_suspend_cpu_usage",
                "Suspend when non-BOINC CPU usage is above",
                "Blank: as when in use (BOINC 7.20.3 and later).",
                "opt",
                "%",
                0,
                100,
            ),
            PrefField(
                "ram_max_used_idle_pct",
                "Use at most",
                "Limit BOINC's memory while the computer is idle.",
                "num",
                "% of memory",
                1,
                100,
            ),
            PrefField(
                "suspend_if_no_recent_input",
                "Suspend when no mouse or keyboard input in the last",
                "Lets the computer go to sleep.",
                "opt",
                "minutes",
                0,
                9999,
            ),
        ),
    ),
    (
        "General",
        (
            PrefField(
                "run_on_batteries",
                "Suspend when the computer runs on battery",
                "Laptops: do not compute on battery power.",
                "bool",
                invert=True,
            ),
            PrefField(
                "cpu_scheduling_period_minutes",
                "Switch between tasks every",
                "With several projects, BOINC may switch this often.",
                "num",
                "minutes",
                1,
                9999,
            ),
            PrefField(
                "disk_interval",
                "Ask tasks to save their progress at most every",
                "How often tasks checkpoint to disk.",
                "num",
                "seconds",
                0,
                9999999,
            ),
            PrefField(
                "leave_apps_in_memory",
                "Leave non-GPU tasks in memory while suspended",
                "Suspended tasks resume without losing work, but keep their memory.",
                "bool",
            ),
            PrefField(
                "work_buf_min_days",
                "Store at least",
                "Enough tasks to keep the computer busy this long.",
                "num",
                "days of work",
                0,
                10,
            ),
            PrefField(
                "work_buf_additional_days",
                "Store up to an additional",
                "More tasks above the minimum, asked for at once.",
                "num",
                "days of work",
                0,
                10,
            ),
            PrefField(
                "start_hour",
                "Compute only between",
                "A daily period; any time if not set.",
                "hours",
                tag2="end_hour",
            ),
        ),
    ),
    (
        "Disk and memory",
        (
            PrefField("disk_max_used_gb", "Use no more than", "Total disk space for BOINC.", "opt", "GB"),
            PrefField(
                "disk_min_free_gb",
                "Leave at least",
                "Free space to leave on the disk BOINC uses.",
                "opt",
                "GB free",
            ),
            PrefField(
                "disk_max_used_pct",
                "Use no more than",
                "Share of the disk BOINC uses.",
                "opt",
                "% of the disk",
                0,
                100,
            ),
            PrefField(
                "vm_max_used_pct",
                "Page/swap file: use at most",
                "Limit BOINC's swap space.",
                "num",
                "%",
                1,
                100,
            ),
        ),
    ),
    (
        "Network",
        (
            PrefField(
                "max_bytes_sec_down", "Limit download rate to", "Blank: no limit.", "opt", "KB/s", scale=1024
            ),
            PrefField(
                "max_bytes_sec_up", "Limit upload rate to", "Blank: no limit.", "opt", "KB/s", scale=1024
            ),
            PrefField(
                "daily_xfer_limit_mb",
                "Limit usage to",
                "Example: 2000 MB every 30 days. Blank: no limit.",
                "pair",
                "MB every",
                tag2="daily_xfer_period_days",
                unit2="days",
            ),
            PrefField(
                "net_start_hour",
                "Transfer files only between",
                "A daily period; any time if not set.",
                "hours",
                tag2="net_end_hour",
            ),
            PrefField(
                "dont_verify_images",
                "Skip data verification for image files",
                "Only if your Internet provider modifies images; less secure.",
                "bool",
            ),
            PrefField(
                "confirm_before_connecting",
                "Confirm before connecting to the Internet",
                "Only for modem, ISDN or VPN connections.",
                "bool",
            ),
            PrefField(
                "hangup_if_dialed", "Disconnect when done", "Only for modem, ISDN or VPN connections.", "bool"
            ),
        ),
    ),
)

ALL_FIELDS = tuple(f for _, group in GROUPS for f in group)
_COVERED = {f.tag for f in ALL_FIELDS} | {f.tag2 for f in ALL_FIELDS if f.tag2}
assert {f.name for f in fields(ComputingPrefs)} == _COVERED, "every preference has a form field"


def _shown(value: float, scale: float) -> float | int:
    shown = value / scale
    return int(shown) if float(shown).is_integer() else round(shown, 3)


class ComputingPrefsForm(forms.Form):
    """One set of computing preferences (the primary set or a venue's)."""

    def __init__(self, *args: Any, prefs: ComputingPrefs, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.base = prefs
        for pref in ALL_FIELDS:
            self._add(pref, prefs)

    def _add(self, pref: PrefField, prefs: ComputingPrefs) -> None:
        value = getattr(prefs, pref.tag)
        if pref.kind == "bool":
            self.fields[pref.tag] = forms.BooleanField(label=pref.label, required=False, help_text=pref.help)
            self.initial[pref.tag] = (not value) if pref.invert else value
        elif pref.kind == "hours":
            start, end = value, getattr(prefs, pref.tag2)
            for tag, hour, label in ((pref.tag, start, pref.label), (pref.tag2, end, "and")):
                self.fields[tag] = forms.ChoiceField(label=label, choices=HOUR_CHOICES, required=False)
                self.initial[tag] = "" if start == end else str(int(hour) % 24)
            self.fields[pref.tag2].help_text = pref.help
        else:
            self._add_number(pref.tag, pref, value, pref.unit, required=pref.kind == "num")
            if pref.kind == "pair":
                self._add_number(pref.tag2, pref, getattr(prefs, pref.tag2), pref.unit2, required=False)

    def _add_number(self, tag: str, pref: PrefField, value: float, unit: str, *, required: bool) -> None:
        self.fields[tag] = forms.FloatField(
            label=pref.label if tag == pref.tag else "",
            required=required,
            min_value=pref.lo,
            max_value=pref.hi,
            help_text=pref.help if tag == (pref.tag2 or pref.tag) else "",
            widget=forms.NumberInput(attrs={"step": "any", "inputmode": "decimal", "data-unit": unit}),
        )
        self.initial[tag] = "" if (not required and value == 0) else _shown(value, pref.scale)

    def groups(self) -> list[tuple[str, list[tuple[PrefField, list[forms.BoundField]]]]]:
        """The bound fields of each group, for the template."""
        return [
            (title, [(p, [self[p.tag], *([self[p.tag2]] if p.tag2 else [])]) for p in group])
            for title, group in GROUPS
        ]

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        assert data is not None  # forms.Form.clean returns cleaned_data
        for pref in ALL_FIELDS:
            if pref.kind == "hours" and (data.get(pref.tag) == "") != (data.get(pref.tag2) == ""):
                self.add_error(pref.tag2, "Choose both hours, or neither for any time.")
            if pref.kind == "pair" and bool(data.get(pref.tag)) != bool(data.get(pref.tag2)):
                self.add_error(pref.tag2, "Give both the megabytes and the days, or neither for no limit.")
        return data

    def prefs(self) -> ComputingPrefs:
        """The set with the form's values (call after is_valid)."""
        data, values = self.cleaned_data, {}
        for pref in ALL_FIELDS:
            if pref.kind == "bool":
                values[pref.tag] = (not data[pref.tag]) if pref.invert else data[pref.tag]
            elif pref.kind == "hours":
                values[pref.tag] = float(data[pref.tag] or 0)
                values[pref.tag2] = float(data[pref.tag2] or 0)
            else:
                values[pref.tag] = (data[pref.tag] or 0.0) * pref.scale
                if pref.kind == "pair":
                    values[pref.tag2] = data[pref.tag2] or 0.0
        return replace(self.base, **values)


def prefs_display(prefs: ComputingPrefs) -> list[tuple[str, list[tuple[str, str]]]]:
    """Each group's lines as (label, value in words), for the preferences page."""
    return [(title, [(p.label, _value_text(p, prefs)) for p in group]) for title, group in GROUPS]


def _value_text(pref: PrefField, prefs: ComputingPrefs) -> str:
    value = getattr(prefs, pref.tag)
    if pref.kind == "bool":
        return "yes" if ((not value) if pref.invert else value) else "no"
    if pref.kind == "hours":
        end = getattr(prefs, pref.tag2)
        return "any time" if value == end else f"{int(value) % 24}:00 and {int(end) % 24}:00"
    if pref.kind == "pair":
        days = getattr(prefs, pref.tag2)
        return "no limit" if not (value and days) else f"{_shown(value, 1)} MB every {_shown(days, 1)} days"
    if pref.kind == "opt" and value == 0:
        if pref.tag.startswith("niu_"):
            return "as when in use"
        return "never" if pref.tag.startswith("suspend") else "no limit"
    return f"{_shown(value, pref.scale)} {pref.unit}"
