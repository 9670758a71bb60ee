"""The dataset's admin form: measures ticked from the metric core's registry, a primary measure among them.

``Dataset.measures`` stays the JSON list of names it always was; the form only
offers the names (``evaluation.measures.registry_names``: every family at the
usual cutoffs, and macro-F1 for classification and NER) as checkboxes, keeps
the stored order, takes other cutoffs or per-language macro-F1 in a text field,
and refuses a primary measure that is not among the chosen ones in words.
"""

from __future__ import annotations

from typing import cast

from django import forms

from catalogue.models import Dataset
from evaluation.measures import FAMILIES, MACRO_F1, language_measure, registry_names

RANKING = "Ranking (retrieval datasets)"
CLASSIFICATION = "Classification and NER"
STORED = "This dataset's other measures"


def _names(text: str) -> list[str]:
    return [n.strip() for n in (text or "").replace("\n", ",").split(",") if n.strip()]


def _languages(text: str) -> list[str]:
    return [code.strip() for code in (text or "").split(",") if code.strip() and len(code.strip()) <= 8]


def measure_groups(*, stored: list[str], languages: list[str]) -> list[tuple[str, list[tuple[str, str]]]]:
    """The checkbox groups: each family's names, macro-F1 (and per language), and stored names outside them."""
    groups: list[tuple[str, list[tuple[str, str]]]] = [
        (f"{RANKING}: {family}", [(n, n) for n in names]) for family, names in registry_names().items()
    ]
    classification = [MACRO_F1, *(language_measure(code) for code in languages)]
    groups.append((CLASSIFICATION, [(n, n) for n in classification]))
    offered = {n for _, choices in groups for n, _ in choices}
    others = [n for n in stored if n not in offered]
    if others:
        groups.append((STORED, [(n, n) for n in others]))
    return groups


class DatasetForm(forms.ModelForm):
    measures = forms.MultipleChoiceField(
        widget=forms.CheckboxSelectMultiple, required=False,
        help_text="The leaderboard's columns, in this order: those already chosen keep their place, new ones follow. "
                  "Definitions: docs/metrics.md.",
    )
    other_measures = forms.CharField(
        required=False, label="Other measures",
        help_text="Names not in the list, separated by commas: another cutoff (e.g. R@3, nDCG@5) or one "
                  "language's macro-F1 (macro-F1/fr). Known families: "
                  + ", ".join(f"{f}@k" if FAMILIES[f].takes_k else f for f in FAMILIES) + f", {MACRO_F1}.",
    )
    primary_measure = forms.ChoiceField(
        help_text="The measure the leaderboard ranks by: one of the measures chosen above.",
    )

    class Meta:
        model = Dataset
        fields = "__all__"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        stored = [str(n) for n in (self.instance.measures or [])] if self.instance.pk else []
        groups = measure_groups(stored=stored, languages=_languages(self.instance.language))
        cast("forms.ChoiceField", self.fields["measures"]).choices = groups
        offered = [n for _, choices in groups for n, _ in choices]
        extra = _names(self.data.get(self.add_prefix("other_measures"), "")) if self.is_bound else []
        primary = [self.instance.primary_measure] if self.instance.primary_measure else []
        names = list(dict.fromkeys([*stored, *offered, *extra, *primary]))
        cast("forms.ChoiceField", self.fields["primary_measure"]).choices = (
            [("", "– choose one of the measures –")] + [(n, n) for n in names])
        self._stored, self._offered = stored, offered

    def clean(self):
        data = super().clean()
        assert data is not None  # ModelForm.clean returns cleaned_data
        ticked = data.get("measures") or []
        place = {n: i for i, n in enumerate(self._offered)}
        new = sorted((n for n in ticked if n not in self._stored), key=lambda n: place.get(n, len(place)))
        chosen = [n for n in self._stored if n in ticked] + new
        chosen += [n for n in _names(data.get("other_measures", "")) if n not in chosen]
        data["measures"] = chosen
        if not chosen:
            self.add_error("measures", "Tick at least one measure: the leaderboard shows these columns.")
        primary = data.get("primary_measure")
        if primary and chosen and primary not in chosen:
            self.add_error(
                "primary_measure",
                f"The primary measure, {primary}, is not among the measures chosen ({', '.join(chosen)}): "
                "tick it above, or choose one of those.",
            )
        return data
