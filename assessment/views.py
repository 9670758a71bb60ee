"""The assessor's pages: my assignments, one assignment's items, judging one item with the keyboard.

Grades are posted by plain forms (one button per grade), so the page works
without JavaScript; ``static/js/assess.js`` adds the single keys (0–3, n, p,
s, u). The time an item took is measured by the server from a signed
timestamp in the form.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from catalogue.models import Topic

from .access import assessor_required, assignment_for
from .errors import AssessmentError
from .highlight import highlight, search_terms
from .judging import (
    first_unjudged,
    grades_of,
    judgment_record,
    judgment_undo,
    neighbours,
    seconds_since,
    shown_token,
    standing,
)
from .models import GRADE_LABELS, GRADES, Assignment, Pool


@never_cache
@assessor_required
def home(request: HttpRequest) -> HttpResponse:
    """The user's assignments with their progress; curators also see every pool."""
    user = request.user
    assert user.is_authenticated  # assessor_required
    rows = []
    for a in Assignment.objects.filter(assessor=user).select_related("pool__split__dataset"):
        total = a.items.count()
        done = len(grades_of(a))
        rows.append({"assignment": a, "total": total, "judged": done, "share": done / total if total else 1.0})
    pools = Pool.objects.select_related("split__dataset") if request.user.is_staff else Pool.objects.none()
    return render(request, "assessment/home.html", {"rows": rows, "pools": pools})


@never_cache
@assessor_required
def assignment(request: HttpRequest, assignment_id: int) -> HttpResponse:
    """One assignment: its items in order with the grades given, and where to resume."""
    a = assignment_for(request, assignment_id)
    graded = grades_of(a)
    items = list(a.items.order_by("qid", "position", "pk"))
    return render(request, "assessment/assignment.html", {
        "assignment": a, "items": [(it, graded.get(it.pk)) for it in items], "judged": len(graded),
        "resume": first_unjudged(a), "own": a.assessor_id == request.user.pk,
    })


@never_cache
@assessor_required
def item(request: HttpRequest, assignment_id: int, item_id: int) -> HttpResponse:
    """Judge one document: the question, its category, the text with the search terms marked; POST a grade."""
    a = assignment_for(request, assignment_id)
    it = get_object_or_404(a.items, pk=item_id)
    own = a.assessor_id == request.user.pk
    if request.method == "POST":
        if not own:
            messages.error(request, "Only the assessor of this assignment can grade its documents.")
            return redirect("assessment:item", a.pk, it.pk)
        try:
            grade = int(request.POST.get("grade", ""))
            judgment_record(assignment=a, item=it, grade=grade, seconds=seconds_since(request.POST.get("shown")))
        except ValueError:
            messages.error(request, f"Choose a grade {GRADES[0]}–{GRADES[-1]}.")
            return redirect("assessment:item", a.pk, it.pk)
        except AssessmentError as exc:
            messages.error(request, str(exc))
            return redirect("assessment:item", a.pk, it.pk)
        after = neighbours(a, it)
        if after.next_unjudged is None:
            messages.success(request, "Every document of this assignment is judged. Thank you!")
            return redirect("assessment:assignment", a.pk)
        return redirect("assessment:item", a.pk, after.next_unjudged.pk)
    topic = Topic.objects.filter(split_id=a.pool.split_id, qid=it.qid).first()
    extra = request.GET.get("terms", "")[:200]
    terms = search_terms(topic.text if topic else "", extra)
    current = standing(item=it, assessor=a.assessor)
    return render(request, "assessment/item.html", {
        "assignment": a, "item": it, "topic": topic, "own": own, "nav": neighbours(a, it),
        "text": highlight(it.doc_text, terms), "title": highlight(it.doc_title, terms), "terms": sorted(terms),
        "extra_terms": extra, "current": current.grade if current is not None else None,
        "grades": [(g, GRADE_LABELS[g]) for g in GRADES], "shown": shown_token(),
    })


@require_POST
@assessor_required
def undo(request: HttpRequest, assignment_id: int) -> HttpResponse:
    """Take back the last grade of this assignment's assessor and show its document again."""
    a = assignment_for(request, assignment_id)
    if a.assessor_id != request.user.pk:
        messages.error(request, "Only the assessor of this assignment can undo its grades.")
        return redirect("assessment:assignment", a.pk)
    back = judgment_undo(assignment=a)
    if back is None:
        messages.info(request, "Nothing to undo.")
        return redirect("assessment:assignment", a.pk)
    messages.info(request, f"Took back the grade of {back.docid} (query {back.qid}).")
    return redirect("assessment:item", a.pk, back.pk)
