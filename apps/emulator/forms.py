"""Forms of the emulator's admin pages."""

from __future__ import annotations

from django import forms

from apps.emulator.domain import PolicyName, ScenarioError, load_scenario
from apps.emulator.models import Scenario

ALL = "all"
POLICY_MODELS = {
    PolicyName.V4: "the 4.x client: CPU only, debt scheduling and work fetch by ETTPRC",
    PolicyName.V6_GPU: "the GPU work-fetch design: per-resource debt and backoff, major and minor shortfall",
    PolicyName.REC: "today's client (recent estimated credit), checked against BOINC's own client emulator",
}
POLICY_CHOICES = [
    (ALL, "All three side by side"),
    *((p.value, f"{p.value}: {POLICY_MODELS[p]}") for p in PolicyName),
]


class ScenarioForm(forms.ModelForm):
    """The stored scenario, checked by the emulator's own loader."""

    class Meta:
        model = Scenario
        fields = ["name", "project", "text"]
        widgets = {"text": forms.Textarea(attrs={"rows": 30, "cols": 100, "style": "font-family: monospace"})}

    def clean_text(self) -> str:
        text = self.cleaned_data["text"]
        try:
            load_scenario(text if "\n" in text else text + "\n")
        except ScenarioError as exc:
            raise forms.ValidationError(f"Not a valid scenario: {exc}") from exc
        return text


class RunForm(forms.Form):
    policy = forms.ChoiceField(
        choices=POLICY_CHOICES,
        initial=ALL,
        # The choices' texts are long: the list must not widen a phone's page.
        widget=forms.Select(attrs={"style": "max-width: 60vw"}),
        help_text="Each policy models one BOINC client; see the emulator documentation for how "
        "each was checked.",
    )
    days = forms.FloatField(
        required=False,
        min_value=0.01,
        max_value=3650,
        help_text="Simulated days; empty uses the scenario's duration.",
    )
    use_project = forms.BooleanField(
        required=False,
        initial=True,
        label="Use the project's current apps",
        help_text="Replace the apps of the project's stand-in with the project's apps and versions.",
    )

    def policies(self) -> list[PolicyName]:
        value = self.cleaned_data["policy"]
        return list(PolicyName) if value == ALL else [PolicyName(value)]
