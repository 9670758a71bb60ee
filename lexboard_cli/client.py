#!/usr/bin/env python3
"""Lexboard command-line client: upload a run, wait for its scores, print them.

Standard library only, one file: copy it next to your experiments and run

    python client.py submit --url https://lexboard.example --token lxb_… \\
        --dataset bsard --run run.trec.gz --system-name "BM25" --wait

or, inside the Lexboard repository, ``python -m lexboard_cli …``.
The token and URL can also come from the environment (``LEXBOARD_TOKEN``,
``LEXBOARD_URL``), which keeps the key out of the shell history.

``submit-image`` sends a container image instead of a run (docs/sandbox.md), as an
archive (``--archive``) or as a reference to the site's registry (``--reference``): the
site runs it in its sandbox on the split's topics and scores the run it writes;
``--wait`` follows the sandbox run, then its submission. ``submit --direct``
sends a run too large for the site's request limit straight to its object
storage (where the site keeps runs in S3). A dataset with data terms takes uploads from accounts that accepted
them: ``--accept-terms`` prints the text and accepts the version in force first.

Exit codes: 0 scored (or, without ``--wait``, accepted), 1 scoring failed (or the image failed or was cancelled)
(the reasons are printed with their line numbers), 2 a usage or HTTP error
(the server's message is printed), 3 still not finished when ``--timeout``
ran out (the submission goes on; ask again with ``status ID``), 4 accepted
and waiting: the split's judgments are not published yet, the run is scored
when they are (``status ID`` later).
"""

from __future__ import annotations

import argparse
import json
import math
import mimetypes
import os
import re
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterable, Iterator
from typing import Any

__all__ = ["Client", "ClientError", "encode_multipart", "main"]

EXIT_OK, EXIT_FAILED, EXIT_ERROR, EXIT_TIMEOUT, EXIT_WAITING = 0, 1, 2, 3, 4
API_PREFIX = "/api/v1"
USER_AGENT = "lexboard-client/1.0 (+python urllib)"
CHUNK = 1 << 16

# Metadata fields of an upload, as (option, form field, help).
METADATA_OPTIONS = [
    ("--description", "description", "a few words about the system"),
    ("--team", "team", "team or affiliation"),
    ("--paper-url", "paper_url", "link to the paper"),
    ("--code-url", "code_url", "link to the code"),
    ("--family", "family", "lexical, dense, hybrid, llm or other"),
    ("--params", "params", "number of parameters, e.g. 110M"),
    ("--latency-ms", "latency_ms", "latency per query in milliseconds"),
    ("--llm-calls-per-query", "llm_calls_per_query", "LLM calls per query"),
    ("--llm-tokens-per-query", "llm_tokens_per_query", "LLM tokens per query"),
    ("--hardware", "hardware", "hardware used, e.g. 1x A100"),
    ("--visibility", "visibility", "public, anonymous or private (default: private, only you see it)"),
    ("--training-data", "training_data", "what the system was trained on (the data closest to the task): none, "
                                          "train_split, other_legal, web_scale or unknown"),
    ("--training-data-note", "training_data_note", "the training data in a few words"),
    ("--could-have-seen", "could_have_seen", "could it have seen this split's corpus or test questions: no, corpus, "
                                             "test_questions, both or unknown"),
]

#: The provenance vocabulary (the server's ``submissions.provenance``; its API schema lists the same enums).
CHOICES = {
    "training_data": ("none", "train_split", "other_legal", "web_scale", "unknown"),
    "could_have_seen": ("no", "corpus", "test_questions", "both", "unknown"),
}
#: A submission's statuses (the server's ``Submission.Status``; the schema of ``GET /api/v1/submissions/`` lists them).
SUBMISSION_STATUSES = ("queued", "scoring", "scored", "failed", "waiting")
#: The longest the server is asked to hold a status answer (``?wait=``; the server takes up to 10 seconds).
HOLD_SECONDS = 10.0
MODEL_HELP = ("a model the system uses and its licence, e.g. --model 'BAAI/bge-m3 MIT' (repeat it for each model; "
              "with set: the list given replaces the stored one)")


#: The metadata an image takes (the site's image form).
IMAGE_OPTIONS = ("--description", "--paper-url", "--code-url", "--visibility", "--training-data",
                 "--training-data-note", "--could-have-seen")


class ClientError(Exception):
    """An HTTP or usage error, with the server's message when there is one."""

    def __init__(self, message: str, *, status: int | None = None, details: list[dict] | None = None):
        super().__init__(message)
        self.message = message
        self.status = status
        self.details = details or []

    def __str__(self) -> str:
        head = f"HTTP {self.status}: {self.message}" if self.status else self.message
        return "\n".join([head, *(_format_detail(d) for d in self.details)])


def _format_detail(detail: dict) -> str:
    line = detail.get("line")
    reason = detail.get("reason", "")
    count, lines = detail.get("count") or 1, detail.get("lines") or []
    if count > 1 and line is not None:  # one kind of problem on many lines: how many, the first, its reason
        shown = ", ".join(str(n) for n in lines[:5]) + (", …" if count > len(lines[:5]) else "")
        return f"  {count:,} lines ({shown}); line {line}: {reason}"
    return f"  line {line}: {reason}" if line is not None else f"  {reason}"


# --- multipart/form-data, streamed ----------------------------------------------------


def _quote(value: str) -> str:
    """A name or filename inside ``Content-Disposition`` quotes (HTML's form encoding).

    Quotes and line breaks would end the header or the value: they are
    percent-encoded the way browsers do it.
    """
    return value.replace("\\", "\\\\").replace('"', "%22").replace("\r", "%0D").replace("\n", "%0A")


def encode_multipart(
    fields: dict[str, str], files: dict[str, str], *, boundary: str | None = None
) -> tuple[str, int, Iterable[bytes]]:
    """Encode form ``fields`` and ``files`` (field → path) as multipart/form-data.

    Returns (content type, content length, an iterable of byte chunks). The
    files are read in chunks while sending, so a large run is never held in
    memory; the length is computed beforehand from the file sizes so the
    server gets a plain ``Content-Length`` request (not chunked).
    """
    boundary = boundary or f"lexboard-{uuid.uuid4().hex}"
    sep = f"--{boundary}\r\n".encode()
    parts: list[bytes | tuple[str, int]] = []
    for name, value in fields.items():
        parts.append(sep)
        parts.append(f'Content-Disposition: form-data; name="{_quote(name)}"\r\n\r\n'.encode())
        parts.append(str(value).encode("utf-8") + b"\r\n")
    for name, path in files.items():
        filename = os.path.basename(path)
        ctype = "application/gzip" if path.endswith(".gz") else (mimetypes.guess_type(filename)[0] or "text/plain")
        parts.append(sep)
        parts.append(
            (
                f'Content-Disposition: form-data; name="{_quote(name)}"; filename="{_quote(filename)}"\r\n'
                f"Content-Type: {ctype}\r\n\r\n"
            ).encode()
        )
        parts.append((path, os.path.getsize(path)))
        parts.append(b"\r\n")
    parts.append(f"--{boundary}--\r\n".encode())
    length = sum(len(p) if isinstance(p, bytes) else p[1] for p in parts)

    def chunks() -> Iterator[bytes]:
        for part in parts:
            if isinstance(part, bytes):
                yield part
                continue
            path, size = part
            sent = 0
            with open(path, "rb") as fh:
                while True:
                    block = fh.read(CHUNK)
                    if not block:
                        break
                    sent += len(block)
                    yield block
            if sent != size:
                raise ClientError(f"{path} changed while it was being sent; try again.")

    return f"multipart/form-data; boundary={boundary}", length, chunks()


# --- the API ----------------------------------------------------------------------------


class Client:
    """A small client of the Lexboard API (``/api/v1/``)."""

    def __init__(self, url: str, token: str | None = None, *, timeout: float = 60.0) -> None:
        url = url.rstrip("/")
        if not url.startswith(("http://", "https://")):
            raise ClientError(f"--url must start with http:// or https:// (got {url!r})")
        if url.endswith(API_PREFIX):
            url = url[: -len(API_PREFIX)]
        self.base = url
        self.token = token
        self.timeout = timeout

    def _url(self, path: str) -> str:
        return path if path.startswith(("http://", "https://")) else f"{self.base}{API_PREFIX}/{path.lstrip('/')}"

    def request(self, method: str, path: str, *, data: Any = None, headers: dict | None = None) -> dict:
        """Send a request and return the JSON answer; raise :class:`ClientError` on any error."""
        headers = {"Accept": "application/json", "User-Agent": USER_AGENT, **(headers or {})}
        if self.token:
            headers["Authorization"] = f"Token {self.token}"
        req = urllib.request.Request(self._url(path), data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                body = resp.read()
        except urllib.error.HTTPError as exc:
            raise _http_error(exc) from None
        except urllib.error.URLError as exc:
            if data is not None and isinstance(exc.reason, (BrokenPipeError, ConnectionResetError)):
                raise ClientError(f"{self.base} closed the connection while the request was being sent: the file may "
                                  "be larger than the site accepts in a request (see --direct)") from None
            raise ClientError(f"cannot reach {self.base}: {exc.reason}") from None
        except (BrokenPipeError, ConnectionResetError):
            raise ClientError(f"{self.base} closed the connection while the request was being sent: the file may be "
                              "larger than the site accepts in a request (see --direct)") from None
        except TimeoutError:
            raise ClientError(f"{self.base} did not answer within {self.timeout:.0f} seconds") from None
        try:
            return json.loads(body.decode("utf-8")) if body else {}
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise ClientError(f"{self._url(path)} did not answer with JSON; is --url the Lexboard site?") from None

    def submit(self, *, dataset: str, run: str, system_name: str, split: str | None = None, **metadata: Any) -> dict:
        """Upload a run; returns ``{"id", "status", "url"}``."""
        if not os.path.isfile(run):
            raise ClientError(f"--run {run!r}: no such file")
        fields = {"dataset": dataset, "system_name": system_name}
        if split:
            fields["split"] = split
        fields.update({k: str(v) for k, v in metadata.items() if v is not None})
        ctype, length, body = encode_multipart(fields, {"run_file": run})
        created = self.request(
            "POST", "submissions/", data=body, headers={"Content-Type": ctype, "Content-Length": str(length)}
        )
        if "id" not in created:
            # urllib follows a redirect of a POST with a GET, dropping the file (e.g. http:// → https://).
            raise ClientError(
                f"{self.base} did not accept the upload (no submission id in its answer); "
                "if the site redirects, give --url exactly as the site's address (https://…)"
            )
        return created

    def submit_direct(self, *, dataset: str, run: str, system_name: str, split: str | None = None,
                      **metadata: Any) -> dict:
        """Upload a run straight to the site's object storage (a presigned POST), then name it: for runs larger
        than the proxy's body limit. A site without object storage answers 409.

        The site gives a slot only where it would take an upload now (and counts it as one); its signed policy
        takes one file of at most ``max_bytes``, which is checked here first. A slot makes one submission:
        refused, it is spent, and the next try asks for a new one."""
        if not os.path.isfile(run):
            raise ClientError(f"--run {run!r}: no such file")
        limits = self.direct_limits()
        size = os.path.getsize(run)
        if size > int(limits["max_bytes"]):
            raise ClientError(f"--run {run!r} is {size:,} bytes; this site takes at most {int(limits['max_bytes']):,} "
                              "bytes a run, direct or not: compress it with gzip, or keep at most the dataset's "
                              "depth of documents per query.")
        name = re.sub(r"[^A-Za-z0-9._-]", "_", os.path.basename(run)).lstrip("._-")[:100] or "run.trec"
        slot = self.upload_slot(name, dataset=dataset, split=split)
        self.post_file(slot["upload_url"], slot["upload_fields"], run)
        fields: dict[str, Any] = {"dataset": dataset, "system_name": system_name, "upload_key": slot["upload_key"]}
        if split:
            fields["split"] = split
        fields.update({k: _json_value(k, v) for k, v in metadata.items() if v is not None})
        created = self.request("POST", "submissions/from-upload", data=json.dumps(fields).encode(),
                               headers={"Content-Type": "application/json"})
        if "id" not in created:
            raise ClientError(f"{self.base} did not accept the upload (no submission id in its answer)")
        return created

    def direct_limits(self) -> dict:
        """What a presigned upload takes here (``max_bytes``, ``slot_seconds``); 409 without object storage.
        Asking stores and counts nothing."""
        return self.request("GET", "uploads/")

    def upload_slot(self, file_name: str, *, dataset: str, split: str | None = None) -> dict:
        """A presigned slot for one large run to a split (``upload_url``, ``upload_fields``, ``upload_key``,
        ``max_bytes``): refused as an upload to that split would be; 409 without object storage."""
        fields = {"file_name": file_name, "dataset": dataset}
        if split:
            fields["split"] = split
        return self.request("POST", "uploads/", data=json.dumps(fields).encode(),
                            headers={"Content-Type": "application/json"})

    def post_file(self, url: str, fields: dict[str, str], path: str) -> None:
        """POST a file to a presigned address as S3's browser form does: the signed fields, then the file last
        (``file``), streamed. The storage refuses a file its policy does not sign (larger than the slot's bound)."""
        ctype, length, body = encode_multipart(fields, {"file": path})
        headers = {"Content-Type": ctype, "Content-Length": str(length), "User-Agent": USER_AGENT}
        req = urllib.request.Request(url, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=max(self.timeout, 600.0)) as resp:
                resp.read()
        except urllib.error.HTTPError as exc:
            text = exc.read().decode("utf-8", "replace")
            found = re.search(r"<Message>(.*?)</Message>", text, re.S)
            raise ClientError(f"the object storage refused the file: {found.group(1) if found else exc.reason}",
                              status=exc.code) from None
        except urllib.error.URLError as exc:
            raise ClientError(f"cannot reach the object storage ({urllib.parse.urlsplit(url).netloc}): "
                              f"{exc.reason}") from None

    def submit_image(self, *, dataset: str, system_name: str, archive: str | None = None,
                     reference: str | None = None, split: str | None = None, **metadata: Any) -> dict:
        """Send a container image, as an archive (what ``podman save --format oci-archive`` writes) or as a
        reference to an image of the site's registry (``NAME:TAG``); returns the sandbox run."""
        if bool(archive) == bool(reference):
            raise ClientError("give the image with --archive FILE or --reference NAME:TAG (one of the two)")
        if archive and not os.path.isfile(archive):
            raise ClientError(f"--archive {archive!r}: no such file")
        fields = {"dataset": dataset, "system_name": system_name}
        if split:
            fields["split"] = split
        if reference:
            fields["reference"] = reference
        fields.update({k: str(v) for k, v in metadata.items() if v is not None})
        ctype, length, body = encode_multipart(fields, {"archive": archive} if archive else {})
        created = self.request(
            "POST", "sandbox/runs/", data=body, headers={"Content-Type": ctype, "Content-Length": str(length)}
        )
        if "id" not in created:
            raise ClientError(
                f"{self.base} did not accept the image (no run id in its answer); "
                "if the site redirects, give --url exactly as the site's address (https://…)"
            )
        return created

    def image_status(self, run_id: int | str) -> dict:
        return self.request("GET", f"sandbox/runs/{int(run_id)}/")

    def image_cancel(self, run_id: int | str) -> dict:
        return self.request("POST", f"sandbox/runs/{int(run_id)}/cancel", data=b"")

    def wait_image(self, run_id: int | str, *, timeout: float = 600.0, interval: float = 2.0,
                   on_change=None) -> dict:
        """Poll a sandbox run until it ran, failed or was cancelled, or ``timeout`` seconds have passed."""
        deadline = time.monotonic() + timeout
        last = None
        while True:
            info = self.image_status(run_id)
            state = (info.get("status"), (info.get("queue") or {}).get("position"), info.get("cancel_requested"),
                     bool(info.get("no_worker")))
            if on_change is not None and state != last:
                on_change(info)
            last = state
            if info.get("status") not in ("queued", "running") or time.monotonic() + interval > deadline:
                return info
            time.sleep(interval)
            interval = min(interval * 1.5, 15.0)

    def status(self, submission_id: int | str, *, wait: float | None = None) -> dict:
        """The submission's status and scores; with ``wait`` (seconds, at most 10) the server holds the answer until
        the run is final or the seconds have passed (``?wait=``)."""
        query = f"?wait={wait:.3f}" if wait else ""
        return self.request("GET", f"submissions/{int(submission_id)}/{query}")

    def per_query(self, submission_id: int | str) -> dict:
        """Per-query values (dev and train splits whose labels are public)."""
        return self.request("GET", f"submissions/{int(submission_id)}/per-query")

    def update(self, submission_id: int | str, **fields: Any) -> dict:
        """Change metadata or visibility: only the fields given."""
        body = json.dumps(fields).encode()
        return self.request("PATCH", f"submissions/{int(submission_id)}/", data=body,
                            headers={"Content-Type": "application/json"})

    def withdraw(self, submission_id: int | str) -> dict:
        return self.request("POST", f"submissions/{int(submission_id)}/withdraw", data=b"")

    def dataset(self, slug: str) -> dict:
        """A dataset: its splits (with your uploads left on each), measures and primary measure."""
        return self.request("GET", f"datasets/{urllib.parse.quote(slug)}/")

    def terms(self, slug: str) -> dict | None:
        """A dataset's data terms in force (text, version, whether you accepted them); None when it has none."""
        try:
            return self.request("GET", f"datasets/{urllib.parse.quote(slug)}/terms")
        except ClientError as exc:
            if exc.status == 404 and "no data terms" in exc.message:
                return None
            raise

    def accept_terms(self, slug: str, version: int) -> dict:
        """Accept version ``version`` of a dataset's terms (the one you read: the server refuses another)."""
        return self.request("POST", f"datasets/{urllib.parse.quote(slug)}/terms/accept",
                            data=json.dumps({"version": int(version)}).encode(),
                            headers={"Content-Type": "application/json"})

    def submissions(self, *, dataset: str | None = None, split: str | None = None, status: str | None = None,
                    page_size: int = 100) -> list[dict]:
        """Your own submissions, newest first, every page of them; only a dataset's, a split's, in a status."""
        query = {k: v for k, v in (("dataset", dataset), ("split", split), ("status", status)) if v}
        found: list[dict] = []
        while True:
            params = urllib.parse.urlencode({**query, "limit": page_size, "offset": len(found)})
            page = self.request("GET", f"submissions/?{params}")
            found.extend(page.get("results") or [])
            if not page.get("next") or not page.get("results"):
                return found

    def leaderboard(self, slug: str, *, split: str | None = None) -> dict:
        """A split's public leaderboard as the API gives it (no token needed)."""
        params = f"?{urllib.parse.urlencode({'split': split})}" if split else ""
        return self.request("GET", f"datasets/{urllib.parse.quote(slug)}/leaderboard{params}")

    def tasks(self, slug: str) -> list:
        """A dataset's shared tasks: phases, dates, caps, and your team in each."""
        return self.request("GET", f"datasets/{urllib.parse.quote(slug)}/tasks")  # type: ignore[return-value]

    def wait(self, submission_id: int | str, *, timeout: float = 600.0, interval: float = 2.0, on_change=None) -> dict:
        """Ask until the submission is scored or failed, or ``timeout`` seconds have passed.

        Each question asks the server to hold its answer until the run is final (``?wait=``, up to
        :data:`HOLD_SECONDS`), so the scores come as soon as they are stored, and the next is asked at once. An
        answer that came at once although the run is not final (the server holding as many answers as it allows)
        is followed by a pause of ``interval`` seconds, growing, as without ``wait``.
        """
        deadline = time.monotonic() + timeout
        last = None
        while True:
            began = time.monotonic()
            hold = min(HOLD_SECONDS, self.timeout / 2, deadline - began)
            info = self.status(submission_id, wait=hold if hold >= 0.1 else None)
            state = (info.get("status"), round(float(info.get("progress") or 0), 2))
            if on_change is not None and state != last:
                on_change(info)
            last = state
            if info.get("status") in ("scored", "failed", "waiting"):  # waiting: for judgments, maybe weeks
                return info
            if time.monotonic() - began >= min(1.0, hold / 2):  # held by the server: ask again at once
                if time.monotonic() >= deadline:
                    return info
                continue
            if time.monotonic() + interval > deadline:
                return info
            time.sleep(interval)
            interval = min(interval * 1.5, 15.0)


#: Metadata the JSON body of ``submit --direct`` sends as numbers or booleans (the schema's types).
_NUMBERS = {"latency_ms", "llm_calls_per_query", "llm_tokens_per_query"}


def _json_value(field: str, value: Any) -> Any:
    if field in _NUMBERS:
        try:
            return float(value)
        except ValueError:
            option = "--" + field.replace("_", "-")
            raise ClientError(f"{option} must be a number (got {value!r})") from None
    return value


def _http_error(exc: urllib.error.HTTPError) -> ClientError:
    """The server's ``{"error": {"message", "details"}}`` as a ClientError, or the bare status."""
    try:
        raw = exc.read()
        body = json.loads(raw.decode("utf-8"))
        error = body.get("error", {})
        message = error.get("message") or str(body)
        details = error.get("details") or []
        if error.get("retry_at"):
            message += f" (next upload allowed at {error['retry_at']})"
    except Exception:  # not our JSON (a proxy's page, an HTML error): say what we know
        message, details = exc.reason or "error", []
    return ClientError(str(message), status=exc.code, details=details)


# --- output ------------------------------------------------------------------------------


def _grid_decimals(grid: object) -> int:
    """Decimals of a percentage on a hidden split's grid (a fraction: 0.01 is whole points, 0.0025 is 0.25); 2
    at full precision. The site's ``evaluation.ladder.grid_decimals`` (this file imports nothing of the project;
    tests/pages/test_one_grid_one_print.py checks the two agree)."""
    if not isinstance(grid, (int, float)) or isinstance(grid, bool) or grid <= 0:
        return 2
    points = 100 * grid
    return next((d for d in range(6) if abs(round(points, d) - points) < 1e-9), 2)


def percent_text(value: object, grid: object = None) -> str:
    """A score (a fraction) as the site prints it: in percent, on a hidden split's ``grid`` with its decimals ("84",
    "84.5"), two decimals at full precision ("51.33"); an en dash when missing. The twin of the site's one
    formatting, ``evaluation.ladder.percent_text``."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return "–"
    if not isinstance(grid, (int, float)) or isinstance(grid, bool) or grid <= 0:
        return f"{100 * float(value):.2f}"
    decimals = max(0, -math.floor(math.log10(grid)) + 1)
    on_grid = round(math.floor(float(value) / grid + 0.5) * grid, decimals)
    return f"{100 * on_grid:.{_grid_decimals(grid)}f}"


def format_scores(info: dict) -> str:
    """The scores as a table in percent, as the site shows them (``--json`` keeps fractions).

    Two decimals on a public split; on a hidden split as many as its grid has (``grid``: whole points on 100
    topics), so no digit is printed that the site did not release. A run the Ladder held back has no scores,
    and its message says why.
    """
    scores = info.get("scores") or {}
    if not scores:
        if info.get("released") is False:
            return "not released: " + (info.get("message") or "the Ladder held this run's scores back")
        return "(no scores)"
    width = max(len("measure"), *(len(name) for name in scores))
    lines = [f"{'measure':<{width}}  percent", f"{'-' * width}  -------"]
    for name, value in scores.items():
        lines.append(f"{name:<{width}}  {percent_text(value, info.get('grid'))}")
    if isinstance(info.get("grid"), (int, float)):
        lines.append(f"(hidden split: values on a grid of {100 * info['grid']:g} points)")
    return "\n".join(lines)


def format_result(info: dict) -> str:
    """A finished (or not) submission for a person: status, scores or reasons, warnings."""
    head = f"submission {info.get('id')} on {info.get('dataset')}/{info.get('split')}: {info.get('status')}"
    lines = [head]
    if info.get("status") == "scored":
        lines.append(format_scores(info))
    elif info.get("status") == "waiting":
        lines.append("waiting: the split's judgments are not published yet; the run is scored when they are")
    elif info.get("status") == "failed":
        error = info.get("error") or {}
        lines.append(f"failed: {error.get('message', 'no reason given')}")
        lines.extend(_format_detail(d) for d in error.get("details") or [])
    else:
        lines.append(f"progress: {100 * float(info.get('progress') or 0):.0f}%")
    for warning in info.get("warnings") or []:
        text = warning.get("message", warning) if isinstance(warning, dict) else warning
        lines.append(f"warning: {text}")
    if "disclosed" in info:
        missing = ", ".join(_FIELD_OPTIONS.get(f, f) for f in info.get("missing_provenance") or [])
        lines.append("provenance: disclosed" if info["disclosed"] else f"provenance: not fully stated ({missing})")
    if info.get("page"):
        lines.append(f"page: {info['page']}")
    return "\n".join(lines)


def format_per_query(body: dict) -> str:
    """The per-query table in percent, one row per query."""
    measures = body.get("measures") or []
    width = max([len("query"), *(len(row["qid"]) for row in body.get("queries") or [])])
    lines = [f"submission {body.get('submission')} on {body.get('dataset')}/{body.get('split')}, per query (percent)",
             "  ".join([f"{'query':<{width}}", *(f"{m:>9}" for m in measures)])]
    for row in body.get("queries") or []:
        cells = [f"{percent_text(row['values'].get(m)):>9}"
                 for m in measures]
        lines.append("  ".join([f"{row['qid']:<{width}}", *cells]))
    return "\n".join(lines)


def format_dataset(body: dict) -> str:
    """A dataset's measures and, per split, the uploads you have left."""
    lines = [f"dataset {body.get('slug')} ({body.get('name')}): measures {', '.join(body.get('measures') or [])}; "
             f"primary {body.get('primary_measure')}"]
    for split in body.get("splits") or []:
        left = split.get("uploads_left")
        if not split.get("accepts_submissions"):
            quota = "takes no uploads"
        elif left is None:
            quota = "uploads left: give --token to see yours"
        else:
            today = "no daily limit" if left.get("today") is None else f"{left['today']} uploads left today"
            total = "no total limit" if left.get("total") is None else f"{left['total']} left in all"
            month = "" if left.get("month") is None else f", {left['month']} left this month (UTC)"
            quota = f"{today}, {total}{month}" + (f" (team {left['team']})" if left.get("team") else "")
            if left.get("next_allowed_at"):
                quota += f"; next upload accepted from {left['next_allowed_at']}"
        needs = "; entries must state their provenance" if split.get("requires_provenance") else ""
        lines.append(f"  split {split.get('name')} ({'hidden' if split.get('hidden') else 'public'} labels): "
                     f"{quota}{needs}")
    return "\n".join(lines)


def format_submissions(found: list[dict]) -> str:
    """Your submissions, one line each: id, dataset/split, status, name, visibility, the first score or the reason."""
    if not found:
        return "no submission (with these filters)"
    lines = []
    for info in found:
        scores = info.get("scores") or {}
        if info.get("status") == "scored" and scores:
            name, value = next(iter(scores.items()))
            decimals = _grid_decimals(info.get("grid"))
            outcome = f"{name} {'–' if value is None else f'{100 * value:.{decimals}f}'}"
        elif info.get("status") == "failed":
            outcome = ((info.get("error") or {}).get("message") or "no reason given")[:100]
        else:
            outcome = ""
        withdrawn = ", withdrawn" if info.get("withdrawn") else ""
        lines.append(f"{info.get('id'):>6}  {info.get('dataset')}/{info.get('split')}  {info.get('status')}  "
                     f"{info.get('system_name')!r} ({info.get('visibility')}{withdrawn})"
                     + (f"  {outcome}" if outcome else ""))
    return "\n".join(lines)


def format_leaderboard(body: dict) -> str:
    """A leaderboard in percent, as the site shows it: rank, system, owner, then every measure."""
    measures = body.get("measures") or []
    decimals = _grid_decimals(body.get("grid"))
    entries = body.get("entries") or []
    head = (f"leaderboard {body.get('dataset')}/{body.get('split')} "
            f"({'hidden' if body.get('hidden') else 'public'} labels), sorted by {body.get('sort')}, percent")
    if not entries:
        return f"{head}\nno entry yet"
    width = max(len("system"), *(len(str(e.get("system") or "")) for e in entries))
    owner_width = max(len("owner"), *(len(str(e.get("owner") or "")) for e in entries))
    cells = [f"{'rank':>4}", f"{'system':<{width}}", f"{'owner':<{owner_width}}", *(f"{m:>9}" for m in measures)]
    lines = [head, "  ".join(cells)]
    for entry in entries:
        values = entry.get("scores") or {}
        row = [f"{entry.get('rank') if entry.get('rank') is not None else '–':>4}",
               f"{entry.get('system') or '':<{width}}", f"{entry.get('owner') or '':<{owner_width}}",
               *(f"{100 * values[m]:>9.{decimals}f}" if values.get(m) is not None else f"{'–':>9}"
                 for m in measures)]
        lines.append("  ".join(row))
    if isinstance(body.get("grid"), (int, float)):
        lines.append(f"(hidden split: values on a grid of {100 * body['grid']:g} points)")
    return "\n".join(lines)


def format_tasks(tasks: list) -> str:
    if not tasks:
        return "no shared task on this dataset"
    lines = []
    for task in tasks:
        team = task.get("my_team")
        lines.append(f"task {task['id']} \u201c{task['title']}\u201d on split {task['split']}: {task['state']}, "
                     f"{task['opens_at']} to {task['closes_at']} ({task['time_zone']}); per team "
                     f"{task['daily_cap'] or 'no'} runs a day, {task['total_cap'] or 'no'} in all, "
                     f"{task['max_final_runs']} final; your team: "
                     + (f"{team['name']} ({', '.join(team['members'])})" if team else "none"))
    return "\n".join(lines)


def format_image(info: dict) -> str:
    """A sandbox run for a person: status and queue place, the outcome's message, digest, limits, time, entry."""
    head = f"sandbox run {info.get('id')} on {info.get('dataset')}/{info.get('split')}: {info.get('status')}"
    if info.get("queue"):
        head += f", {info['queue'].get('text')}"
    elif info.get("cancel_requested") and info.get("status") == "running":
        head += ", stopping (cancel requested)"
    lines = [head]
    if info.get("no_worker"):  # a queued run nothing runs now: said plainly
        lines.append(f"WARNING: {info['no_worker']}")
    if info.get("message"):
        lines.append(f"{'outcome ' + info['outcome'] + ': ' if info.get('outcome') else ''}{info['message']}")
    lines.append(f"image: {info.get('digest')} ({_bytes(info.get('archive_bytes'))}"
                 + (f", {info['reference']})" if info.get("reference") else ")"))
    limits = info.get("limits") or {}
    if limits:
        lines.append(f"limits: {limits.get('memory_mb')} MB memory, {limits.get('cpus')} CPU, {limits.get('pids')} "
                     f"processes, {limits.get('wall_seconds')} s wall time")
    if info.get("seconds") is not None:
        used = f"run time: {float(info['seconds']):.1f} s"
        if info.get("peak_memory_bytes"):
            used += f", peak memory {_bytes(info['peak_memory_bytes'])}"
        lines.append(used)
    if info.get("submission"):
        lines.append(f"its run: submission {info['submission']} ({info.get('submission_url')})")
    if info.get("page"):
        lines.append(f"page: {info['page']}")
    return "\n".join(lines)


def _bytes(n: Any) -> str:
    value = float(n or 0)
    for unit in ("bytes", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GB"


def _exit_code(info: dict) -> int:
    return {"scored": EXIT_OK, "failed": EXIT_FAILED, "waiting": EXIT_WAITING}.get(info.get("status", ""), EXIT_TIMEOUT)


# --- command line -------------------------------------------------------------------------


ACCEPT_TERMS_HELP = ("if the dataset has data terms you have not accepted: print them, then accept them for your "
                     "account (once per version) before uploading")


def accept_terms_if_asked(client: Client, slug: str, err) -> None:
    """``--accept-terms``: the dataset's terms in force, printed in full, then accepted (nothing when there are
    none or they are accepted already)."""
    terms = client.terms(slug)
    if terms is None or terms.get("accepted_at"):
        return
    print(f"Data terms of {slug}, version {terms['version']}: {terms['title']}\n\n{terms['text'].strip()}\n", file=err)
    accepted = client.accept_terms(slug, terms["version"])
    print(f"accepted version {accepted['version']} of {slug}'s data terms for your account "
          f"({accepted['accepted_at']}; the page: {terms['url']})", file=err)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m lexboard_cli",
        description="Upload runs to a Lexboard site and read their scores.",
        epilog="Exit codes: 0 scored/accepted, 1 scoring failed, 2 refused (the reasons are printed), usage or HTTP error, "
               "3 timed out waiting, 4 waiting for the split's judgments (scored when they are published).",
    )
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--url", default=os.environ.get("LEXBOARD_URL"), help="the site, e.g. https://lexboard.example (or $LEXBOARD_URL)")
    common.add_argument("--token", default=os.environ.get("LEXBOARD_TOKEN"), help="your API token (or $LEXBOARD_TOKEN)")
    common.add_argument("--json", action="store_true", help="print the server's JSON answers instead of tables")
    common.add_argument("--timeout", type=float, default=600.0, help="seconds to wait with --wait (default 600)")
    sub = parser.add_subparsers(dest="command", required=True)

    submit = sub.add_parser("submit", parents=[common], help="upload a run")
    submit.add_argument("--dataset", required=True, help="dataset slug, e.g. bsard")
    submit.add_argument("--run", required=True, help="the run file (TREC format, plain or .gz)")
    submit.add_argument("--split", help="split name (default: the dataset's hidden test split)")
    submit.add_argument("--system-name", required=True, help="the name shown on the leaderboard")
    _metadata_arguments(submit)
    submit.add_argument("--used-training-data", action="store_true",
                        help="deprecated: the same as --training-data train_split")
    submit.add_argument("--wait", action="store_true", help="wait for the scores and print them")
    submit.add_argument("--accept-terms", action="store_true", help=ACCEPT_TERMS_HELP)
    submit.add_argument("--direct", action="store_true",
                        help="send the run straight to the site's object storage (a presigned upload), for runs "
                             "larger than the site takes in a request; only where the site keeps runs in S3")

    image = sub.add_parser("submit-image", parents=[common],
                           help="send a container image that makes the run; the site runs it in its sandbox")
    image.add_argument("--dataset", required=True, help="dataset slug, e.g. bsard")
    given = image.add_mutually_exclusive_group(required=True)
    given.add_argument("--archive",
                       help="the image archive: what `podman save --format oci-archive -o image.tar IMAGE` writes")
    given.add_argument("--reference", metavar="NAME:TAG",
                       help="instead of --archive: an image pushed to the site's registry (NAME:TAG or "
                            "NAME@sha256:DIGEST); the site pins its digest when it takes it")
    image.add_argument("--split", help="split name (default: the dataset's hidden test split)")
    image.add_argument("--system-name", required=True, help="the name shown on the leaderboard")
    _metadata_arguments(image, only=IMAGE_OPTIONS)
    image.add_argument("--wait", action="store_true",
                       help="wait for the sandbox to run it, then for the scores of its run, and print them")
    image.add_argument("--accept-terms", action="store_true", help=ACCEPT_TERMS_HELP)

    image_status = sub.add_parser("image-status", parents=[common],
                                  help="a sandbox run's status, queue place, outcome, resources and submission")
    image_status.add_argument("id", type=int, metavar="RUN_ID")
    image_status.add_argument("--wait", action="store_true", help="wait until it ran (and its run is scored)")

    image_cancel = sub.add_parser("image-cancel", parents=[common], help="cancel a queued or running sandbox run")
    image_cancel.add_argument("id", type=int, metavar="RUN_ID")

    status = sub.add_parser("status", parents=[common], help="show a submission's status and scores")
    status.add_argument("id", type=int, metavar="SUBMISSION_ID")
    status.add_argument("--wait", action="store_true", help="wait until it is scored or failed")

    per_query = sub.add_parser("per-query", parents=[common],
                               help="a submission's value on each query (dev and train splits with public labels)")
    per_query.add_argument("id", type=int, metavar="SUBMISSION_ID")

    update = sub.add_parser("set", parents=[common], help="change a submission's visibility or metadata")
    update.add_argument("id", type=int, metavar="SUBMISSION_ID")
    update.add_argument("--system-name", help="the name shown on the leaderboard")
    _metadata_arguments(update)

    withdraw = sub.add_parser("withdraw", parents=[common], help="take a submission off the leaderboard for good")
    withdraw.add_argument("id", type=int, metavar="SUBMISSION_ID")

    dataset = sub.add_parser("dataset", parents=[common],
                             help="a dataset's measures and splits, with your uploads left on each")
    dataset.add_argument("slug", metavar="DATASET", help="dataset slug, e.g. bsard")

    listing = sub.add_parser("list", parents=[common], help="your submissions, newest first")
    listing.add_argument("--dataset", help="only this dataset's (slug)")
    listing.add_argument("--split", help="only this split's (its name, e.g. dev)")
    listing.add_argument("--status", choices=SUBMISSION_STATUSES, help="only those in this status")

    board = sub.add_parser("leaderboard", parents=[common], help="a split's public leaderboard (no token needed)")
    board.add_argument("slug", metavar="DATASET", help="dataset slug, e.g. bsard")
    board.add_argument("--split", help="split name (default: the dataset's hidden test split)")

    tasks = sub.add_parser("tasks", parents=[common], help="a dataset's shared tasks and your team in each")
    tasks.add_argument("slug", metavar="DATASET", help="dataset slug, e.g. coliee-t3")
    return parser


def _metadata_arguments(parser: argparse.ArgumentParser, *, only: tuple[str, ...] | None = None) -> None:
    for option, field, help_text in METADATA_OPTIONS:
        if only is None or option in only:
            parser.add_argument(option, help=help_text, choices=CHOICES.get(field))
    parser.add_argument("--model", action="append", metavar="'ID LICENCE'", help=MODEL_HELP)


def _metadata(args, *, only: tuple[str, ...] | None = None) -> dict[str, Any]:
    """The metadata options given (None for those not given); ``--model`` lines as ``models_used``."""
    metadata = {field: getattr(args, option[2:].replace("-", "_")) for option, field, _ in METADATA_OPTIONS
                if only is None or option in only}
    if args.model is not None:
        # One line per option, its words one space apart (the API takes `id licence` lines exactly).
        metadata["models_used"] = "\n".join(" ".join(line.split()) for line in args.model if line.strip())
    return metadata


#: The server's words for a field → the client's own option, in messages printed to a person.
_FIELD_OPTIONS = {"system_name": "--system-name", "models_used": "--model",
                  **{field: option for option, field, _ in METADATA_OPTIONS}}


#: The request's own fields (not metadata), in messages: ``archive: …`` is ``--archive: …``.
_REQUEST_OPTIONS = {"run_file": "--run", "archive": "--archive", "reference": "--reference", "dataset": "--dataset",
                    "split": "--split"}


def _in_client_terms(text: str) -> str:
    """A server message with its field names as this client's options (``--visibility public``)."""
    for field, option in {**_FIELD_OPTIONS, **_REQUEST_OPTIONS}.items():
        text = re.sub(rf"\b{field}=", f"{option} ", text)
        text = re.sub(rf"(?<![\w-]){field}:", f"{option}:", text)
    return text


def _simple_command(client: Client, args, out) -> int:
    """per-query, set, withdraw, list, leaderboard, dataset, tasks: a request (list: a page at a time), its answer
    printed."""
    if args.command == "per-query":
        body = client.per_query(args.id)
        print(json.dumps(body) if args.json else format_per_query(body), file=out)
    elif args.command == "set":
        fields = {"system_name": args.system_name, **_metadata(args)}
        fields = {k: v for k, v in fields.items() if v is not None}
        if not fields:
            raise ClientError("nothing to change: give at least one option, e.g. --visibility public")
        info = client.update(args.id, **fields)
        print(json.dumps(info) if args.json else format_result(info), file=out)
    elif args.command == "withdraw":
        info = client.withdraw(args.id)
        print(json.dumps(info) if args.json else f"submission {info.get('id')} withdrawn: it is on no board any more",
              file=out)
    elif args.command == "list":
        found = client.submissions(dataset=args.dataset, split=args.split, status=args.status)
        print(json.dumps(found) if args.json else format_submissions(found), file=out)
    elif args.command == "leaderboard":
        body = client.leaderboard(args.slug, split=args.split)
        print(json.dumps(body) if args.json else format_leaderboard(body), file=out)
    elif args.command == "dataset":
        body = client.dataset(args.slug)
        print(json.dumps(body) if args.json else format_dataset(body), file=out)
    else:
        tasks = client.tasks(args.slug)
        print(json.dumps(tasks) if args.json else format_tasks(tasks), file=out)
    return EXIT_OK


def _image_command(client: Client, args, out, err) -> tuple[int | None, int | None]:
    """submit-image, image-status, image-cancel: (an exit code, or None and the submission to wait for)."""
    if args.command == "image-cancel":
        info = client.image_cancel(args.id)
        print(json.dumps(info) if args.json else format_image(info), file=out)
        return EXIT_OK, None
    if args.command == "submit-image":
        if args.accept_terms:
            accept_terms_if_asked(client, args.dataset, err)
        metadata = _metadata(args, only=IMAGE_OPTIONS)
        created = client.submit_image(dataset=args.dataset, archive=args.archive, reference=args.reference,
                                      split=args.split,
                                      system_name=args.system_name, **metadata)
        run_id = created["id"]
        if not args.json:
            print(f"sandbox run {run_id}", file=out)
        elif not args.wait:
            print(json.dumps(created), file=out)
        place = (created.get("queue") or {}).get("text") or created.get("status")
        print(f"accepted: sandbox run {run_id} is {place}: {created.get('url')}", file=err)
        if created.get("no_worker"):
            print(f"WARNING: {created['no_worker']}", file=err)
        if not args.wait:
            return EXIT_OK, None
    else:
        run_id = args.id
        if not args.wait:
            info = client.image_status(run_id)
            print(json.dumps(info) if args.json else format_image(info), file=out)
            return (EXIT_FAILED if info.get("status") in ("failed", "cancelled") else EXIT_OK), None

    def progress(info: dict) -> None:
        where = (info.get("queue") or {}).get("text")
        print(f"  {info.get('status')}{': ' + where if where else ''}", file=err)
        if info.get("no_worker"):
            print(f"  WARNING: {info['no_worker']}", file=err)

    started = time.monotonic()
    info = client.wait_image(run_id, timeout=args.timeout, on_change=progress)
    args.timeout = max(1.0, args.timeout - (time.monotonic() - started))  # what is left for the scoring
    if info.get("status") == "ran" and info.get("submission"):
        if not args.json:
            print(format_image(info), file=err)
        return None, int(info["submission"])
    print(json.dumps(info) if args.json else format_image(info), file=out)
    if info.get("status") in ("queued", "running"):
        print(f"still {info.get('status')} after the --timeout; it goes on: "
              f"`python -m lexboard_cli image-status {run_id} --wait` follows it later", file=err)
        return EXIT_TIMEOUT, None
    return EXIT_FAILED, None


def _too_large(client: Client, args, exc: ClientError) -> ClientError:
    """A 413 to an upload: whether ``--direct`` would take it here (asking the site's limits tells; no slot)."""
    try:
        client.direct_limits()
    except ClientError as probe:
        if probe.status == 409:
            hint = ("This site has no object storage for large runs (so --direct cannot help): compress the run "
                    "with gzip, or cut each query's ranking to the dataset's depth.")
        else:
            hint = "Try again with --direct, which sends the run straight to the site's object storage."
    else:
        hint = ("This site takes large runs straight into its object storage: run the same command with --direct "
                "(the run is sent there, not through the site, and gets the same checks).")
    return ClientError(f"{exc.message} {hint}", status=exc.status, details=exc.details)


def _no_object_storage(exc: ClientError) -> ClientError:
    return ClientError("this site keeps runs on its own disk, not in object storage, so there is nothing to send "
                       "--direct to: submit without --direct (compress a large run with gzip).", status=exc.status)


def main(argv: list[str] | None = None, *, out=None, err=None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: 2 on usage errors, 0 for --help
        return int(exc.code or 0)
    if not args.url:
        print("error: --url is required (or set LEXBOARD_URL)", file=err)
        return EXIT_ERROR
    if args.command in ("submit", "set", "withdraw", "submit-image", "image-status", "image-cancel", "list") \
            and not args.token:
        what = ("to upload" if args.command.startswith("submit") else "to list your submissions"
                if args.command == "list" else f"for {args.command}")
        print(f"error: --token is required {what} (or set LEXBOARD_TOKEN); create one on your profile page", file=err)
        return EXIT_ERROR

    try:
        client = Client(args.url, args.token)
        if args.command in ("submit-image", "image-status", "image-cancel"):
            try:
                code, waiting_for = _image_command(client, args, out, err)
            except ClientError as exc:
                if exc.status == 413 and args.command == "submit-image":
                    raise ClientError(
                        f"{exc.message} (For an image: gzip does not apply; the site takes no larger request. Build "
                        "a smaller image: a slim base, no build tools or caches, a multi-stage build; or ask the "
                        "curators.)", status=exc.status, details=exc.details) from None
                raise
            if waiting_for is None:
                return code if code is not None else EXIT_OK
            submission_id = waiting_for
        elif args.command not in ("submit", "status"):
            return _simple_command(client, args, out)
        elif args.command == "submit":
            metadata = _metadata(args)
            if args.used_training_data:  # the old yes/no flag: the dataset's train split
                if metadata["training_data"] not in (None, "train_split"):
                    raise ClientError(f"--used-training-data says train_split, --training-data says "
                                      f"{metadata['training_data']}: give --training-data alone")
                metadata["training_data"] = "train_split"
                print("note: --used-training-data is deprecated; use --training-data train_split (and state "
                      "--could-have-seen and --model)", file=err)
            if args.accept_terms:
                accept_terms_if_asked(client, args.dataset, err)
            try:
                send = client.submit_direct if args.direct else client.submit
                created = send(dataset=args.dataset, run=args.run, split=args.split, system_name=args.system_name,
                               **metadata)
            except ClientError as exc:
                if exc.status == 413 and not args.direct:
                    raise _too_large(client, args, exc) from None
                if exc.status == 409 and args.direct and "object storage" in exc.message:
                    raise _no_object_storage(exc) from None
                raise
            submission_id = created["id"]
            if not args.json:
                print(f"submission {submission_id}", file=out)
            elif not args.wait:
                print(json.dumps(created), file=out)
            print(f"accepted: submission {submission_id} is {created.get('status')}: {created.get('url')}", file=err)
            if created.get("visibility_note"):
                print(f"  private by default: only you see submission {submission_id}. To show it on the "
                      f"leaderboard: python -m lexboard_cli set {submission_id} --visibility public "
                      "(or anonymous), or give --visibility public with submit.", file=err)
            if not args.wait:
                return EXIT_OK
        else:
            submission_id = args.id
            if not args.wait:
                info = client.status(submission_id)
                print(json.dumps(info) if args.json else format_result(info), file=out)
                return EXIT_FAILED if info.get("status") == "failed" else EXIT_OK

        def progress(info: dict) -> None:
            print(f"  {info.get('status')} {100 * float(info.get('progress') or 0):.0f}%", file=err)

        info = client.wait(submission_id, timeout=args.timeout, on_change=progress)
    except ClientError as exc:
        print(f"error: {_in_client_terms(str(exc))}", file=err)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("interrupted; the submission goes on (see `status ID`)", file=err)
        return EXIT_TIMEOUT

    print(json.dumps(info) if args.json else format_result(info), file=out)
    code = _exit_code(info)
    if code == EXIT_TIMEOUT:
        print(
            f"still {info.get('status')} after {args.timeout:.0f} seconds; it goes on: "
            f"`python -m lexboard_cli status {submission_id}` shows it later",
            file=err,
        )
    return code


if __name__ == "__main__":
    sys.exit(main())
