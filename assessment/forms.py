"""Forms of the curators' pool pages and of the admin's "build a pool"."""

from __future__ import annotations

from typing import cast

from django import forms
from django.contrib.auth import get_user_model
from django.db import transaction

from catalogue.models import Split
from submissions.models import Submission

from .consensus import DISAGREEMENT_RULES
from .errors import AssessmentError
from .merging import CONFLICT_RULES
from .models import ASSESSORS_GROUP, GRADES, Pool
from .pools import pool_assign, pool_build


def assessor_users():
    return get_user_model().objects.filter(groups__name=ASSESSORS_GROUP, is_active=True).order_by("username")


class PoolBuildForm(forms.ModelForm):
    """The admin's add form: the split, the runs, the method and its parameters, the assessors."""

    k = forms.IntegerField(label="depth k", min_value=1, initial=10, required=False,
                           help_text="depth-k: every run's top k documents per query.")
    budget = forms.IntegerField(label="budget per query", min_value=1, initial=20, required=False,
                                help_text="RBP and MTF: at most this many documents per query.")
    p = forms.FloatField(label="RBP persistence p", min_value=0.01, max_value=0.99, initial=0.8, required=False,
                         help_text="0.8 weighs about the top 5 ranks, 0.95 the top 20.")
    depth = forms.IntegerField(label="reading depth (RBP, MTF)", min_value=1, initial=100, required=False,
                               help_text="How deep each run is read.")
    chosen_runs = forms.ModelMultipleChoiceField(
        queryset=Submission.objects.none(), required=False, widget=forms.SelectMultiple(attrs={"size": 8}),
        label="runs", help_text="Leave empty to pool every scored run of the split.")
    assessors = forms.ModelMultipleChoiceField(queryset=get_user_model().objects.none(), required=False,
                                               help_text="Members of the assessors group; items are shared among "
                                                         "them, the overlap share twice.")

    class Meta:
        model = Pool
        fields = ["split", "name", "method", "overlap_share", "seconds_per_judgment"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        cast(forms.ModelChoiceField, self.fields["split"]).queryset = Split.objects.select_related("dataset").filter(
            dataset__task="retrieval")
        runs = cast(forms.ModelChoiceField, self.fields["chosen_runs"])
        runs.queryset = Submission.objects.filter(
            status=Submission.Status.SCORED, withdrawn_at__isnull=True).select_related("split__dataset")
        # Django documents replacing label_from_instance on a field; mypy sees an assignment to a method.
        runs.label_from_instance = lambda s: f"{s.split}: #{s.pk} {s.system_name}"  # type: ignore[method-assign,assignment]
        cast(forms.ModelChoiceField, self.fields["assessors"]).queryset = assessor_users()

    def clean(self):
        data = super().clean()
        assert data is not None  # ModelForm.clean returns cleaned_data
        method = data.get("method")
        if method == Pool.Method.DEPTH and not data.get("k"):
            self.add_error("k", "depth-k needs k (10 is the usual start).")
        if method in (Pool.Method.RBP, Pool.Method.MTF) and not data.get("budget"):
            self.add_error("budget", "this method needs a budget per query.")
        split = data.get("split")
        for s in data.get("chosen_runs") or ():
            if split is not None and s.split_id != split.pk:
                self.add_error("chosen_runs", f"#{s.pk} {s.system_name} is a run of {s.split}, not of {split}.")
        if not self.errors:
            self._build(data)
        return data

    def _build(self, data: dict) -> None:
        """Build the pool (and assign it) now, so that a refusal shows on the form; the admin saves nothing else."""
        try:
            with transaction.atomic():  # a refused assignment takes the pool back with it
                self.built = self._build_and_assign(data)
        except AssessmentError as exc:
            raise forms.ValidationError(f"The pool was not built: {exc}") from exc

    def _build_and_assign(self, data: dict) -> Pool:
        pool = pool_build(split=data["split"], name=data["name"], method=data["method"], params=self.params(),
                          user=getattr(self, "user", None), submissions=list(data.get("chosen_runs") or ()),
                          overlap_share=data["overlap_share"], seconds_per_judgment=data["seconds_per_judgment"])
        if data.get("assessors"):
            pool_assign(pool=pool, assessors=list(data["assessors"]))
        return pool

    def params(self) -> dict:
        d = self.cleaned_data
        if d["method"] == Pool.Method.DEPTH:
            return {"k": d["k"]}
        if d["method"] == Pool.Method.MTF:
            return {"budget": d["budget"], "depth": d.get("depth") or 100}
        return {"budget": d["budget"], "p": d.get("p") or 0.8, "depth": d.get("depth") or 100}


class AssignForm(forms.Form):
    assessors = forms.ModelMultipleChoiceField(queryset=get_user_model().objects.none())
    overlap_share = forms.FloatField(min_value=0, max_value=1, initial=0.1,
                                     help_text="Share of the items judged by two assessors (0.1 = 10%).")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        cast(forms.ModelChoiceField, self.fields["assessors"]).queryset = assessor_users()


GRADE_CHOICES = [(g, str(g)) for g in GRADES]


class AdjudicateForm(forms.Form):
    grade = forms.TypedChoiceField(choices=GRADE_CHOICES, coerce=int)


class ImportForm(forms.Form):
    file = forms.FileField(label="judgments file", help_text="The exported TREC or CSV file with grades filled in.")
    assessor = forms.ModelChoiceField(queryset=get_user_model().objects.none(), required=False,
                                      help_text="Whose judgments these are (default: you).")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        cast(forms.ModelChoiceField, self.fields["assessor"]).queryset = assessor_users()


class MergeForm(forms.Form):
    conflict_rule = forms.ChoiceField(choices=list(CONFLICT_RULES.items()), initial="pool",
                                      label="when the current qrels grade a document differently")
    disagreement_rule = forms.ChoiceField(choices=list(DISAGREEMENT_RULES.items()), initial="leave_out",
                                          label="when assessors disagree and nobody adjudicated")
    note = forms.CharField(max_length=300, required=False,
                           help_text="Shown in the dataset's qrels history, e.g. \"depth-10 pool of 12 runs, 2 assessors\".")
    publish = forms.BooleanField(required=False, initial=True, label="publish and rescore every entry")
    small_change_reason = forms.CharField(
        max_length=300, required=False, label="reason for a small change",
        help_text="Hidden splits refuse a version that changes fewer judgments than the split's minimum batch "
                  "(the board before and after would tell which way each went). To publish one anyway (a wrong "
                  "judgment fixed), say why; the reason is recorded and shown in the qrels history: do not name "
                  "the topic or document.")
