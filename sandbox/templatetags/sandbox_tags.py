"""``{% reproduction submission as run %}``: the sandbox run that made an entry's run (a template asks; no import)."""

from django import template

from sandbox.models import SandboxRun
from sandbox.selectors import submission_reproduction
from submissions import disclosure

register = template.Library()


@register.simple_tag
def reproduction(submission) -> SandboxRun | None:
    return submission_reproduction(submission) if submission is not None else None


@register.simple_tag
def reruns(run: SandboxRun | None) -> list[dict]:
    """A reproduced entry's finished re-runs, newest first: identical, or why not and the score differences.

    On a hidden split the differences are not shown (full-precision deltas of a hidden score are what the
    disclosure rules keep back): only whether the run was identical.
    """
    if run is None:
        return []
    hidden = disclosure.hidden(run.split)
    return [{"at": check.finished_at, "identical": bool(check.comparison.get("identical")),
             "note": check.comparison.get("note", ""),
             "differences": {} if hidden else check.comparison.get("differences", {})}
            for check in run.reruns.filter(status=SandboxRun.Status.RAN).order_by("-finished_at")[:5]]
