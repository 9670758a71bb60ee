"""Where a person's run goes in a shared task: a team's run, a run "after the task", or refused.

Asked by an upload (:mod:`.uploads`) and by a fusion (:mod:`.fusion`) alike, before either costs a slot.
"""

from __future__ import annotations

from campaigns.selectors import UploadPlace, upload_place
from catalogue.models import Split

from ..errors import UploadRefused
from ..models import Submission


def task_place(*, user, split: Split) -> UploadPlace:
    """A shared task's rule (campaigns.selectors.upload_place): refused before the opening or without a team;
    a team's run while open; after the close, a run for the living board marked "after the task".

    A person's runs in a task count for one team: one who sent runs for a team and then left it for another
    is refused, or leaving would give them a new team's caps and an empty Ladder (docs/security.md).
    Uploads and fusions (``fusion_create``) both ask here.
    """
    place = upload_place(user=user, split=split)
    if not place.refusal and place.team is not None:
        earlier = (Submission.objects.filter(user=user, split=split, entrant_team__isnull=False, after_task=False)
                   .exclude(entrant_team=place.team).select_related("entrant_team").first())
        if earlier is not None and earlier.entrant_team is not None:
            place = UploadPlace(refusal=(
                f"You sent runs for the team \u201c{earlier.entrant_team.name}\u201d in this task: a person's runs "
                "count for one team (its caps and its Ladder), so you cannot send runs for another team. Rejoin "
                f"\u201c{earlier.entrant_team.name}\u201d to send more."), phase=place.phase)
    if place.refusal:
        raise UploadRefused(place.refusal, [{"line": None, "reason": place.refusal}])
    return place
