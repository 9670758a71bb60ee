"""Curators' admin for shared tasks: phases (with the reveal), their private boards.

A phase's public topics are never listed here: the admin shows how many
there are. The reveal action publishes the private board now (the beat task
does it at the close; both are idempotent).
"""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.db import transaction
from django.db.models import QuerySet

from campaigns.models import Phase, PrivateBoard
from leaderboard.private_board import phase_reveal
from lexboard.admin_labels import NamedInputsAdmin
from lexboard.text import count
from submissions.selectors import partition_in_use, released_participant_runs
from submissions.services.unpartition import split_partition


class PhaseForm(forms.ModelForm):
    class Meta:
        model = Phase
        fields = "__all__"

    def clean(self) -> dict:
        cleaned = super().clean() or {}
        phase = self.instance
        split = cleaned.get("split")
        if phase.pk and split is not None and split.pk != phase.split_id:
            raise forms.ValidationError({"split": (
                f"A phase stays on its split ({phase.split}): its partition and its runs are that split's. "
                "Add a new phase for another split.")})
        if not phase.pk and split is not None and (shown := released_participant_runs(split_id=split.pk)):
            # Their scores were shown on all topics; during the task they would be shown on the public part,
            # and a participant sending such a run again for a team gets both: by difference, a private topic.
            raise forms.ValidationError({"split": (
                f"{split} already shows the scores of {count(shown, 'run')} by participants on all its topics; "
                "during the task they would be shown on the public part too, and the two give the private topics "
                "away by difference. Set the task up on a hidden split without participants' runs (add one, e.g. "
                "“test-2027”, with the task's topics and judgments); curators' baselines may be there.")})
        # Against the stored values (the instance is updated after clean()): the seed's callable default makes
        # Django compare it with a hidden initial field, which a script's POST may lack.
        moved = {name for name in ("public_share", "seed")
                 if name in cleaned and cleaned[name] != getattr(phase, name)}
        if phase.pk and phase.public_qids and moved and partition_in_use(split_id=phase.split_id):
            # The stored results show their public part on the drawn topics: a new draw would show the same runs
            # on a second set of topics, and the two means differ by the topics that moved in or out.
            raise forms.ValidationError({name: (
                "The partition is in use: runs on this split already show their score on its public topics, so "
                "the public share and the seed cannot change any more (set them back to "
                f"{phase.public_share} and {phase.seed})."
            ) for name in sorted(moved)})
        return cleaned


@admin.register(Phase)
class PhaseAdmin(NamedInputsAdmin, admin.ModelAdmin):  # opens_at, closes_at: date and time inputs
    form = PhaseForm
    list_display = ("title", "split", "opens_at", "closes_at", "time_zone", "state_display", "n_teams",
                    "revealed_at")
    list_select_related = ("split__dataset",)
    readonly_fields = ("partition_display", "revealed_at", "created_at")
    fields = ("split", "title", "opens_at", "closes_at", "time_zone", "daily_cap", "total_cap", "max_final_runs",
              "public_share", "seed", "partition_display", "revealed_at", "created_at")
    actions = ["reveal_now", "reveal_forced"]

    @admin.display(description="state")
    def state_display(self, obj: Phase) -> str:
        return obj.state()

    @admin.display(description="teams")
    def n_teams(self, obj: Phase) -> int:
        return obj.teams.count()

    @admin.display(description="partition")
    def partition_display(self, obj: Phase) -> str:
        n = len(obj.public_qids or [])
        total = obj.split.topics.count() if obj.split_id else 0
        if not n:
            return "drawn when the phase is saved (redrawn at each save until the opening)"
        if obj.state() != "upcoming":
            fixed = "fixed (the phase has opened)"
        elif partition_in_use(split_id=obj.split_id):
            fixed = "fixed (runs on the split show their score on its public topics)"
        else:
            fixed = "redrawn at each save until the opening"
        return f"{n} public topics of {total}; {fixed}. Which ones is never shown."

    def save_model(self, request, obj: Phase, form, change) -> None:
        obj.fix_partition(list(obj.split.topics.values_list("qid", flat=True)),
                          in_use=bool(change) and partition_in_use(split_id=obj.split_id))
        with transaction.atomic():
            super().save_model(request, obj, form, change)
            if obj.partition_active:
                # Runs scored before the phase existed: their results become their public part too.
                cut = split_partition(split=obj.split, public=frozenset(obj.public_qids))
                if cut:
                    messages.info(request, f"{cut} result(s) already stored on {obj.split} now show the public part "
                                           "of the topics, like every run of the phase.")

    def _reveal(self, request, queryset: QuerySet[Phase], *, force: bool) -> None:
        for phase in queryset:
            outcome = phase_reveal(phase_id=phase.pk, force=force)
            messages.add_message(request, messages.SUCCESS if outcome.created else messages.INFO,
                                 f"{phase.title}: {outcome.message}")

    @admin.action(description="Publish the private board (after the close; waits for runs being scored)")
    def reveal_now(self, request, queryset: QuerySet[Phase]) -> None:
        self._reveal(request, queryset, force=False)

    @admin.action(description="Publish the private board now, leaving out runs still being scored")
    def reveal_forced(self, request, queryset: QuerySet[Phase]) -> None:
        self._reveal(request, queryset, force=True)


@admin.register(PrivateBoard)
class PrivateBoardAdmin(admin.ModelAdmin):
    """Snapshots are written by the reveal only: read-only here."""

    list_display = ("phase", "published_at", "qrels_version", "measure", "n_queries")
    readonly_fields = ("phase", "published_at", "qrels_version", "measure", "measures", "n_queries", "rows", "method")

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
