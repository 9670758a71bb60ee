"""The attacker's tools: a hidden split, HTTP against the live site, and readers of what it answers.

Every test here runs against a real gunicorn and a real Celery worker on the
test database (``tests/fixtures_site.py``, ``tests/fixtures_worker.py``):
runs are uploaded through the HTTP API with a token, scored by the worker,
and read back the way an attacker reads them — the page's HTML and SVG, the
status JSON, the API, the exports. Nothing is mocked.

The hidden split (``secret``): 20 topics, 500 documents, 1–4 relevant
documents per topic drawn with a fixed seed, plus judged non-relevant ones.
The attacker's "good retriever" returns 100 documents per topic with the
relevant ones somewhere in its top 30; it does not know which they are, and
the attacks try to find out.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass, field
from html import unescape

import numpy as np
import pytest

from tests.fixtures_site import LiveSite
from tests.waiting import wait_until

N_TOPICS = 20
N_DOCS = 500
DEPTH = 100
SCORING_TIMEOUT = 90.0
MEASURES = ["R@10", "R@100", "MAP@100", "MRR@10", "nDCG@10"]


@dataclass
class Secret:
    """The hidden split and the labels the attacker must never recover."""

    slug: str
    split: object
    relevant: dict[str, set[str]]
    judged: dict[str, set[str]]
    run: dict[str, list[str]]  # the attacker's good retriever: qid -> 100 docids, best first

    def run_text(self, qids: list[str] | None = None, *, overrides: dict[str, list[str]] | None = None) -> bytes:
        """The run as TREC text, for ``qids`` (default: all), with some queries' lists replaced."""
        chosen = self.run if qids is None else {q: self.run[q] for q in qids}
        chosen = {**chosen, **(overrides or {})}
        lines = [f"{q} Q0 {d} {i + 1} {DEPTH - i}.0 attacker" for q, docs in chosen.items()
                 for i, d in enumerate(docs)]
        return ("\n".join(lines) + "\n").encode()


def _build_secret(n_topics: int = N_TOPICS) -> Secret:
    from catalogue.models import Benchmark, Dataset, Split, Topic
    from catalogue.services import corpus_set, qrels_version_add

    rng = np.random.default_rng(20150707)
    docs = [f"d{i:04d}" for i in range(N_DOCS)]
    qids = [f"q{i:02d}" for i in range(1, n_topics + 1)]
    relevant, judged, qrels, run = {}, {}, {}, {}
    for q in qids:
        picked = rng.choice(N_DOCS, size=12, replace=False)
        n_rel = int(rng.integers(1, 5))
        relevant[q] = {docs[i] for i in picked[:n_rel]}
        judged[q] = {docs[i] for i in picked}
        qrels[q] = {docs[i]: (1 if k < n_rel else 0) for k, i in enumerate(picked)}
        others = [d for d in rng.permutation(docs).tolist() if d not in relevant[q]][: DEPTH - n_rel]
        ranking = others[:]
        for d in sorted(relevant[q]):  # somewhere in the top 30, the attacker does not know where
            ranking.insert(int(rng.integers(0, 30)), d)
        run[q] = ranking[:DEPTH]
    slug = f"secret-{uuid.uuid4().hex[:6]}"
    bench = Benchmark.objects.create(slug=slug, name="Secret benchmark")
    ds = Dataset.objects.create(benchmark=bench, slug=slug, name="Secret", language="fr", docid_example="d0001",
                                measures=MEASURES, primary_measure="R@100", category_min_queries=10)
    corpus_set(dataset=ds, ids=docs)
    split = Split.objects.create(dataset=ds, name="test", kind="test", hidden=True, daily_limit=20, total_limit=100)
    for i, q in enumerate(qids):
        Topic.objects.create(split=split, qid=q, text=f"Question {q}?", category="family" if i % 2 else "work")
    qrels_version_add(split=split, qrels=qrels)
    split.refresh_from_db()
    return Secret(slug=slug, split=split, relevant=relevant, judged=judged, run=run)


@pytest.fixture
def stack(live_site, transactional_db, celery_worker_process, private_run_storage) -> LiveSite:
    """The running site (gunicorn + worker) for one test; its rows are committed, so both see them."""
    assert celery_worker_process.alive, celery_worker_process.log()[-3000:]
    return live_site


@pytest.fixture
def secret(stack) -> Secret:
    return _build_secret()


#: Topics of ``wide_secret``: room for an attacker to climb the Ladder three times (below).
WIDE_TOPICS = 48


@pytest.fixture
def wide_secret(stack) -> Secret:
    """The hidden split with 48 topics (its first 20 as ``secret``'s): the Ladder's noisy margin (#37) releases a run
    only when it improves on the identity's best on net + Laplace noise ≥ 8 topics, so a climb of three released
    rounds needs three blocks of clearly more than eight topics, which 20 topics do not hold."""
    return _build_secret(WIDE_TOPICS)


# --- HTTP ----------------------------------------------------------------------------------


@dataclass
class Answer:
    status: int
    body: str
    headers: dict = field(default_factory=dict)

    def json(self):
        return json.loads(self.body)


@dataclass
class Http:
    """An HTTP client of the live site, as one person: anonymous, or with an API token."""

    site: LiveSite
    token: str | None = None
    session: str | None = None  # the session cookie, for the pages (the API takes the token)
    user: object = None

    def _send(self, request: urllib.request.Request) -> Answer:
        if self.token:
            request.add_header("Authorization", f"Token {self.token}")
        if self.session:
            request.add_header("Cookie", f"{settings_session_cookie()}={self.session}")
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return Answer(response.status, response.read().decode("utf-8", "replace"), dict(response.headers))
        except urllib.error.HTTPError as err:
            return Answer(err.code, err.read().decode("utf-8", "replace"), dict(err.headers))

    def get(self, path: str) -> Answer:
        return self._send(urllib.request.Request(self.site.url + path))

    def upload(self, secret: Secret, content: bytes, **fields) -> Answer:
        """``POST /api/v1/submissions/`` (multipart) to the secret split."""
        boundary = uuid.uuid4().hex
        parts = []
        for name, value in {"dataset": secret.slug, "split": "test", **fields}.items():
            parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode())
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="run_file"; filename="run.txt"\r\n'
                     "Content-Type: text/plain\r\n\r\n".encode() + content + b"\r\n")
        parts.append(f"--{boundary}--\r\n".encode())
        request = urllib.request.Request(self.site.url + "/api/v1/submissions/", data=b"".join(parts), method="POST")
        request.add_header("Content-Type", f"multipart/form-data; boundary={boundary}")
        return self._send(request)

    def wait(self, submission_id: int) -> dict:
        """The API's answer once the worker has scored (or failed) the submission."""
        def final():
            data = self.get(f"/api/v1/submissions/{submission_id}/").json()
            return data if data.get("status") in ("scored", "failed") else None

        return wait_until(final, timeout=SCORING_TIMEOUT, what=f"#{submission_id} scored or failed", interval=0.3)


def settings_session_cookie() -> str:
    from django.conf import settings

    return settings.SESSION_COOKIE_NAME


@pytest.fixture
def person(stack, django_user_model):
    """``person("mallory")``: a new participant with a verified e-mail, logged in (a session) and with an API token.

    The session is made the way Django's test client logs in (``force_login``),
    so the attack does not depend on the log-in form.
    """
    from allauth.account.models import EmailAddress
    from django.test import Client

    from accounts.models import ApiToken

    def make(name: str) -> Http:
        user = django_user_model.objects.create_user(name, f"{name}@example.org", "correct horse battery staple")
        EmailAddress.objects.create(user=user, email=user.email, primary=True, verified=True)  # hidden splits ask
        _, key = ApiToken.issue(user=user)
        client = Client()
        client.force_login(user)
        return Http(stack, key, session=client.cookies[settings_session_cookie()].value, user=user)

    return make


@pytest.fixture
def visitor(stack) -> Http:
    return Http(stack)


def submit(client: Http, secret: Secret, content: bytes, **fields) -> tuple[int | None, dict]:
    """Upload and wait: ``(id, API answer)``; ``(None, refusal)`` when the upload itself is refused."""
    answer = client.upload(secret, content, system_name=fields.pop("system_name", "probe"), **fields)
    if answer.status != 202:
        return None, answer.json() if answer.body.startswith("{") else {"body": answer.body}
    submission_id = answer.json()["id"]
    return submission_id, client.wait(submission_id)


# --- reading what the site shows -------------------------------------------------------------


def recall_curve(page_html: str) -> dict[int, float]:
    """The recall curve's points as the attacker reads them from the SVG: {k: mean R@k} at 0.1 px.

    Inverts the plot's axes (log k from 1 to the depth named in its title;
    mean R@k from 0 to 1) from the path ``M x,y L x,y ...``. Empty when the page draws no curve.
    """
    from presentation import plots

    match = re.search(r"<svg[^>]*plot-line.*?</svg>", page_html, re.S)
    if not match:
        return {}
    svg = match.group(0)
    depth = re.search(r"mean R@k for k = 1 to (\d+)", unescape(svg))
    path = re.search(r'<path class="series-0" d="([^"]+)"', svg)
    if not depth or not path:
        return {}
    top = float(depth.group(1))
    left, right = plots.MARGIN_LEFT, plots.WIDTH - plots.MARGIN_RIGHT
    upper, bottom = plots.MARGIN_TOP, plots.HEIGHT - plots.MARGIN_BOTTOM
    points = {}
    for x, y in re.findall(r"[ML](-?[\d.]+),(-?[\d.]+)", path.group(1)):
        k = round(10 ** ((float(x) - left) / (right - left) * np.log10(top)))
        points[k] = (bottom - float(y)) / (bottom - upper)
    return points


def steps(curve: dict[int, float], *, at_least: float) -> list[int]:
    """Ranks k where the curve rises from k - 1 to k by ``at_least`` (both points drawn): a relevant document at k."""
    return [k for k in sorted(curve) if k - 1 in curve and curve[k] - curve[k - 1] >= at_least]


def evaluated_queries(page_html: str) -> int | None:
    match = re.search(r"(\d+) evaluated quer", page_html)
    return int(match.group(1)) if match else None
