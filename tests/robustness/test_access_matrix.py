"""Who reaches what: every URL of the site × {anonymous, owner, another participant, staff}.

``ACCESS`` declares, for every URL pattern (found by walking the resolver, so a
new URL fails ``test_every_url_pattern_declares_its_access`` until its author
adds it here), the URLs to try and the status each role must get. The rules:

* another person's private (or failed) submission, and everything about it —
  page, status JSON, per-query CSV, API, compare — answers as if it did not
  exist: 404 (the compare page's "not visible to you" is the same for both);
* curation (the admin and its import view) is staff-only;
* no response, to anyone (staff included), contains hidden qrels content —
  the marker document and query ids judged only in the hidden split's qrels —
  or a per-query value of the hidden split;
* every POST needs a CSRF token: without one nothing is changed, and forms
  answer 403;
* ids cannot be guessed: walking every id, another participant reaches
  exactly the public submissions.
"""

from __future__ import annotations

import gzip
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pytest
from allauth.account.models import EmailAddress
from django.apps import apps
from django.contrib.auth.models import Group
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.models import ApiToken, ParticipantApproval, Profile
from accounts.terms import terms_accept
from assessment.judging import judgment_record
from assessment.models import Judgment, Pool
from assessment.pools import pool_assign, pool_build
from campaigns.models import Invitation, NotificationSetting, Phase, PrivateBoard, SentNotification, Team
from campaigns.services import team_create
from catalogue.models import Benchmark, Dataset, ReportedResult, Split, Topic
from catalogue.services import corpus_set, data_terms_publish, qrels_version_add
from sandbox.models import SandboxRun, SoftwareImage, SplitSandbox
from snapshots.models import ArchiveImport, Snapshot
from snapshots.services import snapshot_take
from submissions.disclosure import INFORMATION_BUDGET
from submissions.models import LedgerAlert, ReleasePolicy, ReleaseWait, Result, Submission
from submissions.services import submission_create, submission_score_now

pytestmark = pytest.mark.django_db

A, O, X, S = "anonymous", "owner", "other", "staff"
ROLES = (A, O, X, S)

#: Judged only in the hidden split's qrels: no response may ever contain them.
SECRET_DOC = "zzleakdoc4242"
SECRET_QID = "zzleakq77"
#: Query 1 of the hidden split has 7 relevant documents; alice's run finds one: R@100 = MAP@100 = 1/7
#: for that query only. None of the shown aggregates equals it, so its digits must never appear.
HIDDEN_PER_QUERY = ("0.1428", "0.1429", "14.28", "14.29")
HIDDEN_QRELS = {
    "1": {"12": 2, "7": 1, "13": 1, "14": 1, "15": 1, "16": 1, SECRET_DOC: 1},
    "2": {"33": 1},
    "3": {"101": 1, "102": 1, "103": 1},
    SECRET_QID: {"55": 1},
}
DEV_QRELS = {"11": {"40": 1}, "12": {"41": 1, "42": 1}}
ALICE_TEST_RUN = b"1 Q0 12 1 9.0 a\n2 Q0 33 1 9.0 a\n3 Q0 101 1 9.0 a\n3 Q0 150 2 8.0 a\n"
BOB_TEST_RUN = b"1 Q0 12 1 9.0 b\n1 Q0 7 2 8.0 b\n2 Q0 33 1 9.0 b\n3 Q0 102 1 9.0 b\n"
DEV_RUN = b"11 Q0 40 1 9.0 d\n12 Q0 41 1 9.0 d\n12 Q0 99 2 8.0 d\n"
FAILING_RUN = b"1 Q0 12 1 9.0 a\n2 Q0 33 1 9.0 a\n1 Q0 12 3 1.0 a\n"  # a duplicate: fails when scored


@dataclass
class World:
    dataset: Dataset
    test: Split
    dev: Split
    subs: dict[str, Submission]
    tokens: dict[str, ApiToken]
    users: dict[str, object]
    phase: Phase | None = None
    team: Team | None = None
    invitation: Invitation | None = None

    def sub(self, name: str) -> int:
        return self.subs[name].pk


def _submit(user, split, data: bytes, name: str, visibility: str) -> Submission:
    submission = submission_create(
        # A comment with the name: one user's identical content twice on a split is refused.
        user=user, split=split, upload=SimpleUploadedFile("run.txt", data + f"# {name}\n".encode()),
        metadata={"system_name": name, "visibility": visibility}, enqueue=False,
    )
    return submission_score_now(submission.pk)


@pytest.fixture
def world(alice, bob, staff, django_user_model) -> World:
    bench = Benchmark.objects.create(slug="matrix", name="Matrix benchmark")
    dataset = Dataset.objects.create(benchmark=bench, slug="matrix", name="Matrix", language="fr",
                                     docid_example="1234", citation="@article{matrix, title={Matrix}}",
                                     measures=["R@100", "MAP@100", "MRR@100"], primary_measure="R@100")
    corpus_set(dataset=dataset, ids=[str(i) for i in range(1, 201)])
    splits = {}
    for name, hidden, qrels in (("test", True, HIDDEN_QRELS), ("dev", False, DEV_QRELS)):
        # The Ladder off: 3 evaluated queries could never release a score; the budget test below holds
        # one result back by hand, as the Ladder would (tests/security runs the Ladder itself).
        split = Split.objects.create(dataset=dataset, name=name, kind=name, hidden=hidden, daily_limit=0,
                                     total_limit=0, min_coverage=0, ladder=False)  # coverage: tests/submissions
        for qid in qrels:
            if qid != SECRET_QID:  # judged, but no topic: only the qrels know it
                Topic.objects.create(split=split, qid=qid, text=f"Question {qid}?", category="family")
        qrels_version_add(split=split, qrels=qrels)
        splits[name] = split
    ReportedResult.objects.create(dataset=dataset, split=splits["test"], system="BM25 (paper)", scores={"R@100": 0.5})
    Group.objects.create(name="curators")
    for user in (alice, bob, staff):
        Profile.objects.get_or_create(user=user)
    subs = {
        "public": _submit(alice, splits["test"], ALICE_TEST_RUN, "alice public", "public"),
        "private": _submit(alice, splits["test"], ALICE_TEST_RUN, "alice private", "private"),
        "failed": _submit(alice, splits["test"], FAILING_RUN, "alice failed", "private"),
        "dev_public": _submit(alice, splits["dev"], DEV_RUN, "alice dev public", "public"),
        "dev_private": _submit(alice, splits["dev"], DEV_RUN, "alice dev private", "private"),
        "bob_public": _submit(bob, splits["test"], BOB_TEST_RUN, "bob public", "public"),
    }
    subs["withdrawn"] = _submit(alice, splits["test"], ALICE_TEST_RUN, "alice withdrawn", "public")
    Submission.objects.filter(pk=subs["withdrawn"].pk).update(withdrawn_at=timezone.now())
    assert subs["failed"].status == Submission.Status.FAILED
    assert all(s.status == Submission.Status.SCORED for k, s in subs.items() if k != "failed")
    tokens = {"alice": ApiToken.issue(user=alice, name="t")[0], "bob": ApiToken.issue(user=bob, name="t")[0]}
    ParticipantApproval.objects.create(user=bob, dataset=dataset, split=splits["test"])
    # A shared task on a third hidden split, closed and revealed: its page, board, team and notices.
    task = Split.objects.create(dataset=dataset, name="task", kind="test", hidden=True, min_coverage=0, ladder=False)
    now = timezone.now()
    phase = Phase.objects.create(split=task, title="Matrix task", opens_at=now - timedelta(days=3),
                                 closes_at=now + timedelta(days=1), public_qids=["1"])
    team = team_create(phase=phase, user=alice, name="Alice's team")
    invitation = Invitation.objects.create(team=team, email="someone@example.org", invited_by=alice)
    Phase.objects.filter(pk=phase.pk).update(closes_at=now - timedelta(days=1), revealed_at=now)
    PrivateBoard.objects.create(phase=phase, published_at=now, qrels_version=1, measure="R@100",
                                measures=["R@100"], rows=[])
    SentNotification.objects.create(key="matrix:1", kind="run_scored", user=alice, context={})
    # The release ledger's admin rows (the releases themselves are written by the scoring above).
    ReleasePolicy.objects.create(split=splits["test"], first_releases_per_day=5)
    LedgerAlert.objects.create(split=splits["test"], scope="split", day=now.date(), bits=30.0, limit=20.0)
    ReleaseWait.objects.create(result=subs["private"].results.get(), split=splits["test"], identity=f"user:{alice.pk}")
    NotificationSetting.objects.create(user=alice, emails=True)
    # A pool of the hidden split, assigned to an assessor (none of the four roles) who judged one document.
    assessor = django_user_model.objects.create_user("assessor", "assessor@example.org", "x")
    assessor.groups.add(Group.objects.get_or_create(name="assessors")[0])
    pool = pool_build(split=splits["test"], name="matrix pool", method="depth", params={"k": 10}, user=staff)
    (assignment,) = pool_assign(pool=pool, assessors=[assessor], overlap_share=0)
    judgment_record(assignment=assignment, item=pool.items.first(), grade=1)
    # The sandbox: the dev split takes images; alice's image waits in its queue.
    SplitSandbox.objects.create(split=splits["dev"])
    SandboxRun.objects.create(user=alice, split=splits["dev"], image=SoftwareImage.objects.create(sha256="0" * 64),
                              metadata={"system_name": "alice image"})
    snapshot_take(split=splits["test"], note="matrix")  # the hidden split's board, kept
    ArchiveImport.objects.create(archive_sha256="0" * 64, manifest={"benchmark": {"slug": "moved"}, "datasets": []},
                                 missing={"hidden": "omitted"})  # an archive imported here (import_benchmark)
    # A second dataset under data terms, which alice accepted (the terms' pages, their admin and the record's).
    under_terms = Dataset.objects.create(benchmark=bench, slug="matrix-terms", name="Matrix under terms",
                                         language="fr", measures=["R@100"], primary_measure="R@100")
    data_terms_publish(dataset=under_terms, title="Matrix licence", text="Research use only.")
    terms_accept(user=alice, dataset=under_terms, version=1)
    return World(dataset, splits["test"], splits["dev"], subs, tokens, {O: alice, X: bob, S: staff}, phase, team,
                 invitation)


# --- the expectation table ----------------------------------------------------------------------------

Expect = dict[str, int | tuple[int, ...]]
ALL_200: Expect = {A: 200, O: 200, X: 200, S: 200}
LOGIN: Expect = {A: 302, O: 200, X: 200, S: 200}
ANON_ONLY_FORM: Expect = {A: 200, O: 302, X: 302, S: 302}  # log-in/sign-up pages send a logged-in user on
PRIVATE: Expect = {A: 404, O: 200, X: 404, S: 200}
OWNER_FORM: Expect = {A: 302, O: 200, X: 404, S: 200}
POST_ONLY: Expect = {A: (302, 405), O: 405, X: 405, S: 405}
POST_ONLY_OWNER: Expect = {A: (302, 405), O: 405, X: (404, 405), S: 405}
NOWHERE: Expect = {A: 404, O: 404, X: 404, S: 404}


STAFF_PAGE: Expect = {A: 302, O: 404, X: 404, S: 200}
NO_PAGE: Expect = {A: 302, O: 404, X: 404, S: 404}


def _pool() -> Pool:
    return Pool.objects.get(name="matrix pool")


def _assignment():
    return _pool().assignments.get()


def _item():
    return Judgment.objects.get().item


def public(url: str) -> list[tuple[str, Expect]]:
    return [(url, ALL_200)]


def per_submission(view: str, *, public_ok=ALL_200, private=PRIVATE, missing: Expect | None = None):
    """The view for alice's public, private, failed and withdrawn submissions, and for an id that does not exist.

    A private submission must answer like the missing id (404): nobody can tell which ids exist.
    """
    missing = missing or {r: (302 if private[r] == 302 else 404) for r in ROLES}

    def build(w: World):
        return [(reverse(view, args=[w.sub("public")]), public_ok),
                (reverse(view, args=[w.sub("private")]), private),
                (reverse(view, args=[w.sub("failed")]), private),
                (reverse(view, args=[w.sub("withdrawn")]), private),
                (reverse(view, args=[999_999]), missing)]
    return build


def _csv(w: World):
    view = "participants:per_query_csv"
    return [
        (reverse(view, args=[w.sub("dev_public")]), ALL_200),
        (reverse(view, args=[w.sub("dev_private")]), PRIVATE),
        # Hidden split: no per-query download for anyone, not even the owner or staff.
        (reverse(view, args=[w.sub("public")]), NOWHERE),
        (reverse(view, args=[w.sub("private")]), NOWHERE),
    ]


def _compare(w: World):
    page = reverse("participants:compare")
    pub, priv, bob = w.sub("public"), w.sub("private"), w.sub("bob_public")
    return [
        (page, ALL_200),
        (f"{page}?ids={pub},{bob}", ALL_200),
        (f"{page}?ids={pub}", ALL_200),
        (f"{page}?ids={priv},{bob}", {A: 400, O: 200, X: 400, S: 200}),  # same answer as an unknown id
        (f"{page}?ids=999999,{bob}", {A: 400, O: 400, X: 400, S: 400}),
    ]


def _api_compare(w: World):
    url = reverse("api:compare")
    pub, priv, bob = w.sub("public"), w.sub("private"), w.sub("bob_public")
    return [
        (f"{url}?submissions={pub},{bob}", ALL_200),
        (f"{url}?submissions={priv},{bob}", PRIVATE),
        (f"{url}?submissions=999999,{bob}", NOWHERE),
    ]


def _exports(w: World):
    out = []
    for fmt in ("csv", "json", "tex", "bib"):
        for split in ("test", "dev"):
            out.append((reverse("leaderboard:export", args=["matrix", fmt]) + f"?split={split}", ALL_200))
    return out


ACCESS: dict[str, Callable[[World], list[tuple[str, Expect]]]] = {
    "healthz": lambda w: public(reverse("healthz")),
    "leaderboard:home": lambda w: public(reverse("leaderboard:home")),
    "leaderboard:benchmark": lambda w: public(reverse("leaderboard:benchmark", args=["matrix"])),
    "leaderboard:dataset": lambda w: [(reverse("leaderboard:dataset", args=["matrix"]) + q, ALL_200)
                                      for q in ("", "?split=test", "?split=dev", "?split=test&sort=MAP@100")],
    "leaderboard:export": _exports,
    "leaderboard:dataset_file": lambda w: [
        (reverse("leaderboard:dataset_file", args=["matrix", "topics-test.tsv.gz"]), ALL_200),
        (reverse("leaderboard:dataset_file", args=["matrix", "qrels-test.txt.gz"]), {A: 404, O: 404, X: 404, S: 404}),
    ],
    # A dataset's data terms: readable by everyone (accepting them is a POST); none on a dataset without terms.
    "leaderboard:data_terms": lambda w: [(reverse("leaderboard:data_terms", args=["matrix-terms"]), ALL_200),
                                         (reverse("leaderboard:data_terms", args=["matrix"]), NOWHERE)],
    "leaderboard:data_terms_version": lambda w: [
        (reverse("leaderboard:data_terms_version", args=["matrix-terms", 1]), ALL_200),
        (reverse("leaderboard:data_terms_version", args=["matrix-terms", 2]), NOWHERE)],
    "leaderboard:docs": lambda w: public(reverse("leaderboard:docs")),
    # A redirect to the static icon, for everyone.
    "leaderboard:favicon": lambda w: [(reverse("leaderboard:favicon"), {A: 302, O: 302, X: 302, S: 302})],
    # django-allauth's pages (accounts/urls.py) and ours.
    "account_signup": lambda w: [(reverse("account_signup"), ANON_ONLY_FORM)],
    "account_login": lambda w: [(reverse("account_login"), ANON_ONLY_FORM)],
    "account_logout": lambda w: [(reverse("account_logout"), {A: 302, O: 200, X: 200, S: 200})],  # GET: a button
    "account_inactive": lambda w: public(reverse("account_inactive")),
    "account_reauthenticate": lambda w: [(reverse("account_reauthenticate"), LOGIN)],
    # Log-in and reauthentication by code are off: the pages send everyone on.
    "account_request_reauthentication_code": lambda w: [
        (reverse("account_request_reauthentication_code"), {A: 302, O: (200, 302), X: (200, 302), S: (200, 302)})],
    "account_confirm_reauthentication_code": lambda w: [
        (reverse("account_confirm_reauthentication_code"), {r: 302 for r in ROLES})],
    "account_confirm_login_code": lambda w: [(reverse("account_confirm_login_code"), {r: 302 for r in ROLES})],
    "account_email": lambda w: [(reverse("account_email"), LOGIN)],
    "account_email_verification_sent": lambda w: public(reverse("account_email_verification_sent")),
    "account_confirm_email": lambda w: public(reverse("account_confirm_email", args=["bogus-key"])),
    "account_change_password": lambda w: [(reverse("account_change_password"), LOGIN)],
    "account_set_password": lambda w: [(reverse("account_set_password"), {r: 302 for r in ROLES})],
    "account_reset_password": lambda w: public(reverse("account_reset_password")),
    "account_reset_password_done": lambda w: public(reverse("account_reset_password_done")),
    "account_reset_password_from_key": lambda w: public(
        reverse("account_reset_password_from_key", kwargs={"uidb36": "1", "key": "set-password-bogus"})),
    "account_reset_password_from_key_done": lambda w: public(reverse("account_reset_password_from_key_done")),
    "accounts:profile": lambda w: [(reverse("accounts:profile"), LOGIN)],
    "accounts:token_create": lambda w: [(reverse("accounts:token_create"), POST_ONLY)],
    "accounts:token_revoke": lambda w: [(reverse("accounts:token_revoke", args=[w.tokens["alice"].pk]),
                                         POST_ONLY_OWNER)],
    "accounts:participation": lambda w: [(reverse("accounts:participation", args=[w.test.pk]), LOGIN),
                                         (reverse("accounts:participation", args=[999_999]),
                                          {A: 302, O: 404, X: 404, S: 404})],
    "participants:upload": lambda w: [(reverse("participants:upload", args=["matrix"]) + q, LOGIN)
                                     for q in ("", "?split=test", "?split=dev")],
    "participants:mine": lambda w: [(reverse("participants:mine"), LOGIN)],
    # The sandbox: the image form (the split takes no images here: the page says so), a run's page and its
    # cancel, for someone else's or a missing run alike (tests/sandbox/test_pages.py: owners and staff).
    "sandbox:upload": lambda w: [(reverse("sandbox:upload", args=[w.test.pk]), LOGIN)],
    "sandbox:run": lambda w: [(reverse("sandbox:run", args=[SandboxRun.objects.get().pk]), OWNER_FORM),
                              (reverse("sandbox:run", args=[999_999]), NO_PAGE)],
    "sandbox:cancel": lambda w: [(reverse("sandbox:cancel", args=[SandboxRun.objects.get().pk]), POST_ONLY),
                                 (reverse("sandbox:cancel", args=[999_999]), POST_ONLY)],
    "participants:detail": per_submission("participants:detail"),
    "participants:status": per_submission("participants:status"),
    "participants:edit": per_submission("participants:edit", public_ok=OWNER_FORM, private=OWNER_FORM),
    "participants:visibility": per_submission("participants:visibility", public_ok=POST_ONLY_OWNER,
                                             private=POST_ONLY_OWNER, missing=POST_ONLY_OWNER),
    "participants:withdraw": per_submission("participants:withdraw", public_ok=POST_ONLY_OWNER,
                                           private=POST_ONLY_OWNER, missing=POST_ONLY_OWNER),
    "participants:resubmit": per_submission("participants:resubmit", public_ok=OWNER_FORM, private=OWNER_FORM),
    "participants:compare": _compare,
    "participants:fusion": lambda w: [(reverse("participants:fusion") + q, LOGIN)
                                     for q in ("", f"?split={w.test.pk}", f"?split={w.dev.pk}")],
    "participants:per_query_csv": _csv,
    # Snapshots: public pages of a published dataset's board; taking one is a curator's POST (GET: 405 for all).
    "snapshots:board": lambda w: [(reverse("snapshots:board", args=["matrix"]) + q, ALL_200)
                                  for q in ("", "?split=test", "?split=dev")],
    "snapshots:detail": lambda w: [(reverse("snapshots:detail", args=[Snapshot.objects.get().key]), ALL_200),
                                   (reverse("snapshots:detail", args=["no-such-snapshot"]), NOWHERE)],
    "snapshots:diff": lambda w: [(reverse("snapshots:diff", args=[Snapshot.objects.get().key]), ALL_200)],
    "snapshots:export": lambda w: [(reverse("snapshots:export", args=[Snapshot.objects.get().key, f]), ALL_200)
                                   for f in ("csv", "json", "tex", "bib")],
    "snapshots:take": lambda w: [(reverse("snapshots:take", args=["matrix"]), {r: 405 for r in ROLES})],
    # The release ledger of a hidden split: curators only.
    "participants:ledger": lambda w: [(reverse("participants:ledger", args=[w.test.pk]), STAFF_PAGE),
                                     (reverse("participants:ledger", args=[999_999]), NO_PAGE)],
    "api:submissions": lambda w: [(reverse("api:submissions") + "?mine=1", {A: 401, O: 200, X: 200, S: 200})],
    "api:submission": per_submission("api:submission"),
    "api:submission_final": lambda w: [(reverse("api:submission_final", args=[w.sub("public")]),
                                        {A: (401, 405), O: 405, X: 405, S: 405})],
    "api:datasets": lambda w: public(reverse("api:datasets")),
    # The participant's files: the topics of every split (and public judgments) for everyone; unknown names 404.
    "api:dataset_files": lambda w: public(reverse("api:dataset_files", args=["matrix"])),
    "api:leaderboard": lambda w: [(reverse("api:leaderboard", args=["matrix"]) + q, ALL_200)
                                  for q in ("", "?split=test", "?split=dev")],
    "api:compare": _api_compare,
    "api:fusions": lambda w: [(reverse("api:fusions"), {A: 405, O: 405, X: 405, S: 405})],
    # The researcher's API: a dataset and its tasks for everyone; per-query values of what one may see, on dev
    # splits only (a test split's are refused to all, its owner included); the POSTs refuse a GET.
    "api:dataset": lambda w: public(reverse("api:dataset", args=["matrix"])),
    "api:dataset_tasks": lambda w: public(reverse("api:dataset_tasks", args=["matrix"])),
    "api:dataset_terms": lambda w: [(reverse("api:dataset_terms", args=["matrix-terms"]), ALL_200),
                                    (reverse("api:dataset_terms", args=["matrix"]), NOWHERE)],
    "api:dataset_terms_accept": lambda w: [(reverse("api:dataset_terms_accept", args=["matrix-terms"]),
                                            {A: (401, 405), O: 405, X: 405, S: 405})],
    "api:submission_per_query": lambda w: [
        (reverse("api:submission_per_query", args=[w.sub("dev_public")]), ALL_200),
        (reverse("api:submission_per_query", args=[w.sub("dev_private")]), {A: 404, O: 200, X: 404, S: 200}),
        (reverse("api:submission_per_query", args=[w.sub("public")]), {A: 403, O: 403, X: 403, S: 403}),
        (reverse("api:submission_per_query", args=[w.sub("private")]), {A: 404, O: 403, X: 404, S: 403})],
    "api:submission_withdraw": lambda w: [(reverse("api:submission_withdraw", args=[w.sub("public")]),
                                           {A: 405, O: 405, X: 405, S: 405})],
    # A method an operation lacks is a 405 for anyone, before any token is asked for (api/contract.py; the schema
    # says which operations need one): a GET of the POST-only operations below is 405 for anonymous visitors too.
    # GET: whether the site takes runs straight into object storage (409 here: no S3); a slot is a POST.
    "api:upload_slots": lambda w: [(reverse("api:upload_slots"), {A: 401, O: 409, X: 409, S: 409})],
    "api:submissions_from_upload": lambda w: [(reverse("api:submissions_from_upload"),
                                               {A: 405, O: 405, X: 405, S: 405})],
    # The sandbox through the API: a run is its participant's and staff's (404 for anyone else, as on its page);
    # sending an image and cancelling are POSTs.
    "api:sandbox_runs": lambda w: [(reverse("api:sandbox_runs"), {A: 405, O: 405, X: 405, S: 405})],
    "api:sandbox_run": lambda w: [(reverse("api:sandbox_run", args=[SandboxRun.objects.get().pk]),
                                   {A: 401, O: 200, X: 404, S: 200}),
                                  (reverse("api:sandbox_run", args=[999_999]), {A: 401, O: 404, X: 404, S: 404})],
    "api:sandbox_run_cancel": lambda w: [(reverse("api:sandbox_run_cancel", args=[SandboxRun.objects.get().pk]),
                                          {A: 405, O: 405, X: 405, S: 405})],
    # Shared tasks: the task's page and its private board for everyone; team actions are POSTs of logged-in users
    # (the services check membership); an invitation link asks an anonymous visitor to sign up first.
    "leaderboard:task": lambda w: [(reverse("leaderboard:task", args=[w.phase.pk]), ALL_200),
                                   (reverse("leaderboard:task", args=[999_999]), NOWHERE)],
    "leaderboard:board_export": lambda w: [(reverse("leaderboard:board_export", args=[w.phase.pk, f]), ALL_200)
                                           for f in ("csv", "json", "tex")],
    "campaigns:team_create": lambda w: [(reverse("campaigns:team_create", args=[w.phase.pk]), POST_ONLY)],
    "campaigns:invite": lambda w: [(reverse("campaigns:invite", args=[w.team.pk]), POST_ONLY)],
    "campaigns:new_link": lambda w: [(reverse("campaigns:new_link", args=[w.team.pk]), POST_ONLY)],
    "campaigns:leave": lambda w: [(reverse("campaigns:leave", args=[w.team.pk]), POST_ONLY)],
    "campaigns:join": lambda w: [(reverse("campaigns:join", args=[w.team.invite_token]), LOGIN),
                                   (reverse("campaigns:join", args=["bogus"]), NOWHERE)],
    "campaigns:invitation": lambda w: [(reverse("campaigns:invitation", args=[w.invitation.token]), LOGIN),
                                         (reverse("campaigns:invitation", args=["bogus"]), NOWHERE)],
    "leaderboard:mark_final": lambda w: [(reverse("leaderboard:mark_final", args=[w.sub("public")]), POST_ONLY)],
    "campaigns:notifications": lambda w: [(reverse("campaigns:notifications"), LOGIN)],
    "api:schema": lambda w: public(reverse("api:schema")),
    # Assessment: assessors (none of the four roles here; tests/assessment) and staff only; others get a 404.
    "assessment:home": lambda w: [(reverse("assessment:home"), STAFF_PAGE)],
    "assessment:assignment": lambda w: [(reverse("assessment:assignment", args=[_assignment().pk]), STAFF_PAGE),
                                        (reverse("assessment:assignment", args=[999_999]), NO_PAGE)],
    "assessment:item": lambda w: [(reverse("assessment:item", args=[_assignment().pk, _item().pk]), STAFF_PAGE),
                                  (reverse("assessment:item", args=[_assignment().pk, 999_999]), NO_PAGE)],
    "assessment:undo": lambda w: [(reverse("assessment:undo", args=[_assignment().pk]), POST_ONLY)],
    "assessment:pool": lambda w: [(reverse("assessment:pool", args=[_pool().pk]), STAFF_PAGE),
                                  (reverse("assessment:pool", args=[999_999]), NO_PAGE)],
    "assessment:assign": lambda w: [(reverse("assessment:assign", args=[_pool().pk]), POST_ONLY)],
    "assessment:adjudicate": lambda w: [(reverse("assessment:adjudicate", args=[_pool().pk, _item().pk]), POST_ONLY)],
    "assessment:export": lambda w: [(reverse("assessment:export", args=[_pool().pk, f]), STAFF_PAGE)
                                    for f in ("trec", "csv")],
    "assessment:import": lambda w: [(reverse("assessment:import", args=[_pool().pk]), POST_ONLY)],
    "assessment:bias": lambda w: [(reverse("assessment:bias", args=[_pool().pk]), STAFF_PAGE)],
    "assessment:make_qrels": lambda w: [(reverse("assessment:make_qrels", args=[_pool().pk]), STAFF_PAGE)],
    "api:docs": lambda w: public(reverse("api:docs")),
}

# --- the admin: staff only ------------------------------------------------------------------------------

STAFF_ONLY: Expect = {A: 302, O: 302, X: 302, S: 200}
ADMIN_MODEL_VIEW = re.compile(
    r"^admin:(?P<app>[a-z]+)_(?P<model>[a-z]+)_(?P<view>changelist|add|change|history|delete)$")
ADMIN_REDIRECT = re.compile(r"^admin/(?P<app>[a-z]+)/(?P<model>[a-z]+)/<path:object_id>/$")
#: Models whose add (or delete) page is refused to staff too: their rows are made by importers and services.
READ_ONLY = {"snapshot", "corpus", "qrelsversion", "result", "statusevent", "apitoken", "topic", "split", "submission",
             "privateboard", "sentnotification", "poolitem", "assignment", "judgment", "release", "ledgeralert",
             "releasewait", "archiveimport", "termsacceptance"}

ADMIN_SPECIAL: dict[str, Callable[[World], list[tuple[str, Expect]]]] = {
    "admin:index": lambda w: [(reverse("admin:index"), STAFF_ONLY)],
    # Through allauth's log-in page; a logged-in non-staff user is refused.
    "admin:login": lambda w: [(reverse("admin:login"), {A: 302, O: 403, X: 403, S: 302})],
    "admin:logout": lambda w: [(reverse("admin:logout"), {A: 302, O: 302, X: 302, S: 405})],
    "admin:password_change": lambda w: [(reverse("admin:password_change"), STAFF_ONLY)],
    "admin:password_change_done": lambda w: [(reverse("admin:password_change_done"), STAFF_ONLY)],
    "admin:autocomplete": lambda w: [(reverse("admin:autocomplete"), {A: 302, O: 302, X: 302, S: 403})],
    "admin:jsi18n": lambda w: [(reverse("admin:jsi18n"), STAFF_ONLY)],
    "admin:view_on_site": lambda w: [
        (reverse("admin:view_on_site", args=[_content_type("submissions", "submission"), w.sub("private")]),
         {A: 302, O: 302, X: 302, S: 302})],
    "admin:app_list": lambda w: [(reverse("admin:app_list", args=[label]), STAFF_ONLY)
                                 for label in ("auth", "catalogue", "submissions", "account", "accounts", "assessment", "campaigns")],
    "admin/(?P<url>.*)$": lambda w: [("/admin/no-such-page/", {A: 302, O: 302, X: 302, S: 404})],
    "admin:snapshots_snapshot_take": lambda w: [(reverse("admin:snapshots_snapshot_take"), STAFF_ONLY)],
    "admin:catalogue_dataset_import": lambda w: [
        (reverse("admin:catalogue_dataset_import", args=[w.dataset.pk]), STAFF_ONLY)],
    "admin:auth_user_password_change": lambda w: [
        (reverse("admin:auth_user_password_change", args=[w.users[O].pk]), STAFF_ONLY)],
}


def _content_type(app: str, model: str) -> int:
    from django.contrib.contenttypes.models import ContentType

    return ContentType.objects.get(app_label=app, model=model).pk


def _admin_model_urls(name: str, match: re.Match) -> Callable[[World], list[tuple[str, Expect]]]:
    model = apps.get_model(match["app"], match["model"])
    view = match["view"]

    def build(w: World):
        obj = model.objects.order_by("pk").first()
        assert obj is not None, f"the world has no {model.__name__} to open in the admin"
        args = [] if view in ("changelist", "add") else [obj.pk]
        staff = 200
        if view == "add" and match["model"] in READ_ONLY:
            staff = (200, 403)
        if view == "delete":
            staff = (200, 403)
        return [(reverse(name, args=args), {A: 302, O: 302, X: 302, S: staff})]
    return build


def _admin_redirect(pattern: str, match: re.Match) -> Callable[[World], list[tuple[str, Expect]]]:
    model = apps.get_model(match["app"], match["model"])

    def build(w: World):
        obj = model.objects.order_by("pk").first()
        url = "/" + pattern.replace("<path:object_id>", str(obj.pk))
        return [(url, {r: (301, 302) for r in ROLES})]  # to the change page, itself staff-only
    return build


# --- walking the resolver -------------------------------------------------------------------------------


def url_patterns(patterns=None, prefix: str = "", namespace: str | None = None):
    """(key, full pattern) for every URL: the key is the namespaced name, or the pattern when unnamed."""
    patterns = get_resolver().url_patterns if patterns is None else patterns
    for p in patterns:
        if isinstance(p, URLResolver):
            ns = namespace
            if p.namespace:
                ns = f"{namespace}:{p.namespace}" if namespace else p.namespace
            yield from url_patterns(p.url_patterns, prefix + str(p.pattern), ns)
        elif isinstance(p, URLPattern):
            full = prefix + str(p.pattern)
            if p.name:
                yield (f"{namespace}:{p.name}" if namespace else p.name), full
            else:
                yield full, full


def builder_for(key: str, full: str):
    if key in ACCESS:
        return ACCESS[key]
    if key in ADMIN_SPECIAL:
        return ADMIN_SPECIAL[key]
    if m := ADMIN_MODEL_VIEW.match(key):
        return _admin_model_urls(key, m)
    if m := ADMIN_REDIRECT.match(full):
        return _admin_redirect(full, m)
    for special in ADMIN_SPECIAL:
        if special in full:
            return ADMIN_SPECIAL[special]
    return None


def test_every_url_pattern_declares_its_access():
    missing = [key for key, full in url_patterns() if builder_for(key, full) is None]
    assert not missing, (
        "these URLs have no entry in tests/robustness/test_access_matrix.py ACCESS; declare who may reach them: "
        + ", ".join(missing))
    stale = set(ACCESS) - {key for key, _ in url_patterns()}
    assert not stale, f"ACCESS names URLs that no longer exist: {sorted(stale)}"


def all_probes(w: World) -> list[tuple[str, Expect]]:
    probes = []
    seen = set()
    for key, full in url_patterns():
        for url, expect in builder_for(key, full)(w):
            if url not in seen:
                seen.add(url)
                probes.append((url, expect))
    return probes


def client_for(role: str, w: World, *, csrf: bool = False) -> Client:
    client = Client(enforce_csrf_checks=csrf)
    if role != A:
        client.force_login(w.users[role])
    return client


#: Template syntax that reached the visitor: a comment Django did not strip (``{# … #}`` is one line only),
#: an unknown tag, a variable printed as text. The sweep below fails on any of them in an HTML answer. A variable
#: is written ``{{ name }}`` here, with a space: BibTeX's ``{{GreekBarRetrieval}`` in a citation is not one.
RAW_TEMPLATE = re.compile(r"\{#|\{%|\{\{\s")


def raw_template_syntax(response, body: str) -> list[str]:
    """The raw template syntax in an HTML answer, each with some context to find its template by."""
    if not response.get("Content-Type", "").startswith("text/html"):
        return []
    return [body[max(0, m.start() - 60):m.end() + 60].replace("\n", " ") for m in RAW_TEMPLATE.finditer(body)]


#: An ISO timestamp's seconds and fraction ("18:05:14.283412"): "14.28" there is a clock, not a score.
TIMESTAMP = re.compile(r"\d{2}:\d{2}:\d{2}\.\d+")


def leaks(body: str) -> list[str]:
    found = [m for m in (SECRET_DOC, SECRET_QID) if m in body]
    unclocked = TIMESTAMP.sub("hh:mm:ss", body)
    found += [v for v in HIDDEN_PER_QUERY if v in unclocked]
    return found


@pytest.mark.slow  # > 2 s (docs/testing.md)
@pytest.mark.parametrize("role", ROLES)
def test_access_matrix(role, world):
    """Every URL answers ``role`` with the declared status, no answer carries hidden labels, none shows raw
    template syntax and none is a 5xx (the sweep of every page: the roles are a visitor, the owner, another
    participant and a curator)."""
    client = client_for(role, world)
    wrong, leaked, raw = [], [], []
    for url, expect in all_probes(world):
        response = client.get(url)
        allowed = expect[role] if isinstance(expect[role], tuple) else (expect[role],)
        if response.status_code not in allowed:
            wrong.append(f"{url}: {response.status_code}, expected {expect[role]}")
        assert response.status_code < 500, url
        body = b"".join(response.streaming_content) if response.streaming else response.content
        text = body.decode("utf-8", "replace")
        if found := leaks(text):
            leaked.append(f"{url}: {found}")
        if found := raw_template_syntax(response, text):
            raw.append(f"{url}: {found[:3]}")
    assert not raw, "raw template syntax shown to the visitor:\n" + "\n".join(raw)
    assert not leaked, "hidden labels or hidden per-query values in responses:\n" + "\n".join(leaked)
    assert not wrong, f"wrong status for {role}:\n" + "\n".join(wrong)


def test_the_leak_detector_sees_per_query_values_where_they_are_shown(world, client):
    """Positive control: were the split not hidden, the owner's page would show the marked per-query value."""
    Split.objects.filter(pk=world.test.pk).update(hidden=False)
    client.force_login(world.users[O])
    body = client.get(reverse("participants:detail", args=[world.sub("public")])).content.decode()
    assert leaks(body), "the per-query marker is never shown, so the matrix could not catch a leak"


# --- CSRF: no POST without a token changes anything ---------------------------------------------------


def _state() -> dict:
    from django.contrib.auth import get_user_model

    from submissions.models import Result, StatusEvent

    models = (get_user_model(), Group, Benchmark, Dataset, Split, Topic, ReportedResult, Submission, Result,
              StatusEvent, ApiToken, Profile, EmailAddress, ParticipantApproval, Team, Invitation, NotificationSetting,
              Pool, Judgment)
    state = {m.__name__: m.objects.count() for m in models}
    state["submissions"] = sorted(Submission.objects.values_list("pk", "visibility", "withdrawn_at", "system_name"))
    state["tokens"] = sorted(ApiToken.objects.values_list("pk", "revoked_at"))
    return state


#: Forms a browser posts with the session cookie: without the token they must answer exactly 403.
FORMS = {
    "account_signup", "account_login", "account_logout", "accounts:token_create", "accounts:token_revoke",
    "account_change_password", "account_reset_password", "account_email", "account_reauthenticate",
    "accounts:profile", "accounts:participation", "participants:upload",
    "participants:edit", "participants:visibility", "participants:withdraw", "participants:resubmit",
    "participants:fusion", "admin:logout", "admin:catalogue_dataset_import",
    "campaigns:team_create", "campaigns:invite", "campaigns:new_link", "campaigns:leave", "campaigns:join",
    "campaigns:invitation", "leaderboard:mark_final", "campaigns:notifications", "leaderboard:data_terms",
    "assessment:item", "assessment:undo", "assessment:assign", "assessment:adjudicate", "assessment:import",
    "assessment:make_qrels", "sandbox:upload", "sandbox:cancel",
}
#: What a form would change were its token not checked.
POST_DATA = {"visibility": "private", "system_name": "changed", "name": "new token", "username": "mallory",
             "password1": "correct horse battery staple 2", "password2": "correct horse battery staple 2",
             "email": "mallory@example.org", "password": "correct horse battery staple", "ids": "1,2",
             "new_password1": "another horse battery", "new_password2": "another horse battery",
             "old_password": "correct horse battery staple", "format": "trec", "split": "extra", "action": "hide",
             "_selected_action": "1"}


@pytest.mark.parametrize("role", ROLES)
def test_no_post_without_a_csrf_token_changes_anything(role, world):
    client = client_for(role, world, csrf=True)
    named = {}
    for key, full in url_patterns():
        for url, _ in builder_for(key, full)(world):
            named.setdefault(url, key)
    before = _state()
    wrong = []
    for url, key in named.items():
        response = client.post(url, POST_DATA)
        if response.status_code < 400 or (key in FORMS and response.status_code != 403):
            wrong.append(f"{url} ({key}): {response.status_code}")
    assert not wrong, f"POST without a CSRF token as {role} was not refused:\n" + "\n".join(wrong)
    assert _state() == before


def test_the_api_refuses_a_session_post_without_csrf_but_takes_a_token(world):
    """Session auth (a browser's cookie) needs the CSRF token; a token header is not ambient, so it needs none."""
    run = SimpleUploadedFile("run.txt", DEV_RUN)
    form = {"dataset": "matrix", "split": "dev", "system_name": "api", "run_file": run}
    session = client_for(O, world, csrf=True)
    before = Submission.objects.count()
    assert session.post(reverse("api:submissions"), form).status_code == 403
    assert Submission.objects.count() == before
    _, key = ApiToken.issue(user=world.users[O], name="api")
    api = APIClient(enforce_csrf_checks=True)
    api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    run.seek(0)
    assert api.post(reverse("api:submissions"), form, format="multipart").status_code == 202


def test_a_form_with_its_csrf_token_goes_through(world):
    """Control for the CSRF test: the same withdraw POST with the page's token works, so the 403 was the token."""
    client = client_for(O, world, csrf=True)
    client.get(reverse("participants:mine"))
    token = client.cookies["csrftoken"].value
    url = reverse("participants:withdraw", args=[world.sub("private")])
    assert client.post(url, {}).status_code == 403
    assert client.post(url, {"csrfmiddlewaretoken": token}).status_code == 302
    assert Submission.objects.get(pk=world.sub("private")).withdrawn_at is not None


# --- guessing ids ------------------------------------------------------------------------------------------


def test_walking_ids_reaches_only_public_submissions(world):
    """Bob walks every id (page, status JSON, per-query CSV, API by session and token): public ones only, else 404."""
    bob = client_for(X, world)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {ApiToken.issue(user=world.users[X], name='probe')[1]}")
    last = Submission.objects.order_by("-pk").first().pk
    visible = {s.pk for s in Submission.objects.all() if s.visible_to(world.users[X])}
    assert visible == {world.sub("public"), world.sub("dev_public"), world.sub("bob_public")}
    for pk in range(1, last + 4):
        for name, client in (("participants:detail", bob), ("participants:status", bob), ("api:submission", bob),
                             ("api:submission", api)):
            status = client.get(reverse(name, args=[pk])).status_code
            assert status == (200 if pk in visible else 404), (name, pk, status)
        csv = bob.get(reverse("participants:per_query_csv", args=[pk])).status_code
        assert csv == (200 if pk == world.sub("dev_public") else 404), (pk, csv)  # hidden split: never
        own = pk == world.sub("bob_public")
        assert bob.get(reverse("participants:edit", args=[pk])).status_code == (200 if own else 404), pk
        assert bob.get(reverse("participants:resubmit", args=[pk])).status_code == (200 if own else 404), pk
        assert bob.post(reverse("participants:withdraw", args=[pk])).status_code in ((302,) if own else (404,)), pk
    alice_subs = Submission.objects.filter(user=world.users[O])
    assert not alice_subs.exclude(pk=world.sub("withdrawn")).filter(withdrawn_at__isnull=False).exists()


def test_errors_of_a_failed_run_reach_only_its_owner_and_staff(world):
    """A failed run's details name its lines; nobody else sees them, even if the owner made it public."""
    Submission.objects.filter(pk=world.sub("failed")).update(visibility="public")
    url = reverse("api:submission", args=[world.sub("failed")])
    for role in ROLES:
        client = client_for(role, world)
        body = client.get(url).json()
        details = body["error"]["details"]
        if role in (O, S):
            assert details and details[0]["line"] == 3
        else:
            assert details == []


def test_private_entries_show_on_leaderboards_only_to_their_owner_and_never_in_exports(world):
    """The owner sees her private row (marked) on the page and the API; nobody else; no export ever carries it."""
    Submission.objects.filter(pk=world.sub("withdrawn")).update(system_name="alice gone")
    for role in ROLES:
        client = client_for(role, world)
        page = client.get(reverse("leaderboard:dataset", args=["matrix"]) + "?split=test").content.decode()
        api = client.get(reverse("api:leaderboard", args=["matrix"]) + "?split=test").content.decode()
        assert ("alice private" in page) == (role == O), role
        assert ("alice private" in api) == (role == O), role
        for fmt in ("csv", "json", "tex"):
            export = client.get(reverse("leaderboard:export", args=["matrix", fmt]) + "?split=test")
            body = export.content.decode()
            assert "alice public" in body and "bob public" in body
            assert "alice private" not in body and "alice gone" not in body, (role, fmt)
        assert "alice gone" not in page and "alice gone" not in api
        assert "alice failed" not in page and "alice failed" not in api


# --- the hidden-budget column: what each URL reveals about a hidden split -----------------------------------
# The budget itself is data of its one owner: submissions.disclosure.INFORMATION_BUDGET.


def test_every_url_declares_what_it_reveals_about_a_hidden_split_as_docs_security_says():
    doc = (Path(__file__).resolve().parents[2] / "docs" / "security.md").read_text()
    table = doc.split("## The information budget of a hidden split", 1)[1].split("\n## ", 1)[0]
    rows = table[table.index("| view (code) |"):].split("\n\n", 1)[0].splitlines()[2:]
    cells = [row.split(" | ", 1)[0] for row in rows]
    paths = {cell: re.findall(r"`([^`]+)`", cell) for cell in cells if not cell.startswith("| same")}
    for key, budget in INFORMATION_BUDGET.items():
        assert key in ACCESS, f"disclosure.INFORMATION_BUDGET names {key}, which is not a URL of the site"
        assert any(budget.view in path for found in paths.values() for path in found), \
            f"docs/security.md's budget table has no row for {budget.view} ({key})"
    # And each row of the table is a view the budget names (a row no URL declares is a claim nothing checks).
    named = {budget.view for budget in INFORMATION_BUDGET.values()}
    for cell, found in paths.items():
        assert any(view in path for path in found for view in named), \
            f"docs/security.md's budget table has a row no URL of disclosure.INFORMATION_BUDGET declares: {cell}"
    # Every other URL shows nothing derived from the hidden qrels: no score, no count of judged documents.
    quiet = [k for k in ACCESS if k not in INFORMATION_BUDGET]
    assert "accounts:profile" in quiet and "leaderboard:docs" in quiet


#: Views a hidden split never shows (docs/security.md, "Never shown on a hidden split").
NEVER_ON_HIDDEN = ("Recall curve", "Distribution of per-query", "By number of relevant documents", "Judged@10",
                   "95% interval",
                   "better</th>", "overlap", '"wins": 0', '"wins": 1', '"wins": 2', '"wins": 3')


def _hidden_values(w: World) -> tuple[set[str], set[str]]:
    """(full-precision digits of every hidden mean, rounded digits of the held-back run's own means)."""
    full, held = set(), set()
    for result in Result.objects.filter(submission__split=w.test):
        for value in result.scores.values():
            full.add(f"{value:.6f}"[:-1])  # 5 decimals: beyond the display precision
    bob = Result.objects.get(submission_id=w.sub("bob_public"))
    alice = Result.objects.get(submission_id=w.sub("public"))
    for measure, value in bob.scores.items():
        if round(value, 4) != round(alice.scores[measure], 4):
            held |= {f"{value:.4f}", f"{100 * value:.2f}"}
    return full, held


def _shows(value: str, body: str) -> bool:
    """Whether ``body`` shows the number ``value`` (or more digits of it), not a part of another number or time.

    Not after a digit, a dot, or a digit and a colon (JSON's ``"R@10":0.4`` is a number): a time with
    fractions of a second, such as an export's ``published_at`` "…T23:31:40.481234", holds "40.48", and a
    held-back mean of 40.48 percent failed the test once on such a clock reading.
    """
    return re.search(r"(?<![\d.])(?<!\d:)" + re.escape(value), body) is not None


@pytest.mark.slow  # > 2 s (docs/testing.md)
@pytest.mark.parametrize("role", ROLES)
def test_what_every_url_reveals_about_a_hidden_split_stays_within_its_budget(role, world):
    """No answer shows a hidden mean beyond the display precision, a held-back run's values, or a per-query view."""
    Result.objects.filter(submission_id=world.sub("bob_public")).update(
        released=False, ladder_message="Not a significant improvement over your best (0.5000); your best stays.")
    full, held = _hidden_values(world)
    client = client_for(role, world)
    over = []
    for url, _ in all_probes(world):
        if url.startswith(("/admin", "/assessment/")):
            continue  # curators see everything in the admin, and the judging itself on the assessment pages
        response = client.get(url)
        raw = b"".join(response.streaming_content) if response.streaming else response.content
        body = (gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).decode()  # downloads are gzip files
        hidden_url = (url.startswith(("/d/", "/submissions/", "/api/v1/submissions", "/api/v1/compare"))
                      and "split=dev" not in url and str(world.sub("dev_public")) not in url.split("/"))
        shown = [v for v in full if _shows(v, body)] + [v for v in held if _shows(v, body)]
        shown += [m for m in NEVER_ON_HIDDEN if hidden_url and m in body]
        if shown:
            over.append(f"{url}: {shown}")
    assert not over, f"beyond the hidden split's budget for {role}:\n" + "\n".join(over)


def test_the_budget_detector_sees_full_precision_where_it_is_shown(world, client):
    """Positive control: on a public split the API gives full precision, which the detector must catch."""
    Split.objects.filter(pk=world.test.pk).update(hidden=False)
    full, _ = _hidden_values(world)
    body = client.get(reverse("api:submission", args=[world.sub("public")])).content.decode()
    assert any(_shows(v, body) for v in full)


def test_the_budget_detector_reads_numbers_not_clock_times():
    assert _shows("40.48", "<td>40.48</td>") and _shows("0.40482", '"R@10":0.404821,')
    assert not _shows("40.48", '"published_at": "2026-12-01T23:31:40.481234+00:00"')
    assert not _shows("0.4048", "10.4048")
