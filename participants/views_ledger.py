"""The release ledger of a hidden split, for curators (``/submissions/ledger/<split id>/``).

Staff only: anyone else gets a 404 (the page does not exist for them), a
visitor who is not logged in the log-in page. The same rows are in the admin
(Submissions → Releases, Ledger alerts, Release waits).
"""

from __future__ import annotations

from django.contrib.auth.views import redirect_to_login
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_safe

from catalogue.models import Split
from submissions.services.ledger import ledger_summary


@require_safe
def ledger(request: HttpRequest, split_id: int) -> HttpResponse:
    """Releases per identity and per day, the bits released (an upper bound), alerts, flagged runs, waits."""
    if not request.user.is_authenticated:
        return redirect_to_login(request.get_full_path())
    if not request.user.is_staff:
        raise Http404("No such page.")
    split = get_object_or_404(Split.objects.select_related("dataset"), pk=split_id)
    return render(request, "participants/ledger.html", {"split": split, **ledger_summary(split=split)})
