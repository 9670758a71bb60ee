"""The proxy's own answers under /api/ are the API's JSON error shape; the API's URL contract holds behind it.

Through the composed nginx (docker/nginx/lexboard.conf) on loopback:

- nginx's own refusals: 413 (body over 210 MiB; an image over 2,100 MiB on the image URLs), 400 (a header over 16 KiB,
  a malformed request) in ``{"error": {"message", "details"}}`` under /api/
  and as a short HTML page elsewhere; a 408 (headers not sent within 10 s) is
  a closed connection with no answer at all: nginx never sends a body for it.
- the application's answers pass through unchanged: a path without its slash,
  an unknown query parameter (400 naming it), the schema's format, a 404.
- 502 with web and web-2 stopped; 504 from a second proxy with the same file
  but a 2 s read timeout, the web containers paused. Last in the session: it
  stops web.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.ports import free_port

from .stack import DOCKER, STAND_INS, run, say, variant

pytestmark = [pytest.mark.deploy, pytest.mark.slow]

SHAPE = {"message", "details"}


def raw(port: int, data: bytes, *, read_timeout: float = 20) -> tuple[bytes, float]:
    """Send bytes as they are to 127.0.0.1:port; everything read until the server closes, and how long it took."""
    t0 = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(data)
        sock.settimeout(read_timeout)
        out = b""
        while chunk := sock.recv(65536):
            out += chunk
    return out, time.monotonic() - t0


def parse(answer: bytes) -> tuple[int, dict[str, str], bytes]:
    head, _, body = answer.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:])}
    return int(lines[0].split()[1]), headers, body


def json_error(status: int, headers, body: bytes, expected: int) -> dict:
    assert status == expected, (status, headers, body[:500])
    assert headers["content-type"].startswith("application/json"), headers
    error = json.loads(body)["error"]
    assert set(error) >= SHAPE and isinstance(error["details"], list), error
    return error


def get(url: str, **headers: str) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, {k.lower(): v for k, v in response.headers.items()}, response.read()
    except urllib.error.HTTPError as err:
        return err.code, {k.lower(): v for k, v in err.headers.items()}, err.read()


def test_nginx_refusals_under_api_are_json_and_elsewhere_a_page(stack):
    port = stack.port
    with ThreadPoolExecutor(1) as background:  # the 408 takes the 10 s of client_header_timeout: meanwhile, the rest
        slow = background.submit(raw, port, b"GET /api/v1/datasets/ HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: 1\r\n")

        too_big = b"POST /api/v1/submissions/ HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 300000000\r\n\r\nx"
        error = json_error(*parse(raw(port, too_big)[0]), 413)
        assert "210 MiB" in error["message"] and "gzip" in error["message"], error
        status, headers, body = parse(raw(port, too_big.replace(b"/api/v1/submissions/", b"/submit/"))[0])
        assert status == 413 and headers["content-type"].startswith("text/html") and b"210 MiB" in body, body

        # An image archive may be larger (2 GiB, LEXBOARD_SANDBOX_MAX_IMAGE_BYTES) on the two URLs that take one:
        # nginx says "100 Continue" (it would read the body) where a run's URL gets the 413 at once.
        for url in (b"/api/v1/sandbox/runs/", b"/sandbox/splits/1/submit/"):
            with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
                sock.sendall(b"POST " + url + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 300000000\r\n"
                             b"Expect: 100-continue\r\n\r\n")
                assert sock.recv(100).startswith(b"HTTP/1.1 100 Continue"), url
        over = too_big.replace(b"300000000", b"2300000000").replace(b"/api/v1/submissions/", b"/api/v1/sandbox/runs/")
        error = json_error(*parse(raw(port, over)[0]), 413)
        assert "2 GiB" in error["message"] and "registry" in error["message"], error

        long_header = b"GET /api/v1/datasets/ HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * 20000 + b"\r\n\r\n"
        error = json_error(*parse(raw(port, long_header)[0]), 400)
        assert "16 KiB" in error["message"], error

        malformed = b"GET /api/v1/datasets/ HTTP/1.1\r\nHost: 127.0.0.1\r\nno colon here\r\n\r\n"
        error = json_error(*parse(raw(port, malformed)[0]), 400)
        assert "could not be read" in error["message"], error

        answer, took = slow.result(timeout=60)
    # nginx closes a connection whose headers did not arrive in time without sending anything (no 408 page to
    # replace): the client sees the connection closed, never HTML.
    assert answer == b"" and 9 <= took < 20, (answer[:300], took)
    say(f"proxy refusals: 413, 400 (header too large, malformed) in JSON under /api/; 408 closed in {took:.1f}s")


def test_the_api_url_contract_holds_through_the_proxy(stack, demo_runs):
    url = stack.url
    status, headers, body = get(f"{url}/api/v1/datasets")  # no trailing slash: the same operation, no redirect
    assert status == 200 and headers["content-type"].startswith("application/json"), (status, body[:300])
    error = json_error(*get(f"{url}/api/v1/datasets/?bogus=1"), 400)
    assert "'bogus'" in error["message"], error
    error = json_error(*get(f"{url}/api/v1/schema/?format=bogus"), 400)
    assert "format=json" in error["message"], error
    status, headers, body = get(f"{url}/api/v1/schema/?format=json")
    assert status == 200 and "json" in headers["content-type"] and json.loads(body)["openapi"].startswith("3."), (
        status, headers)
    json_error(*get(f"{url}/api/v1/nothing-here"), 404)

    # A POST without the slash reaches the upload, through nginx, with the token (not a 301 to HTML).
    boundary = "lexboard-deploy-boundary"
    form = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"dataset\"\r\n\r\ndemo\r\n"
            f"--{boundary}\r\nContent-Disposition: form-data; name=\"split\"\r\n\r\ntest\r\n"
            f"--{boundary}\r\nContent-Disposition: form-data; name=\"system_name\"\r\n\r\nno-slash\r\n"
            f"--{boundary}\r\nContent-Disposition: form-data; name=\"run_file\"; filename=\"run.trec\"\r\n"
            "Content-Type: text/plain\r\n\r\n").encode() + variant(demo_runs["bm25"], "no-slash") + (
            f"\r\n--{boundary}--\r\n").encode()
    request = urllib.request.Request(f"{url}/api/v1/submissions", data=form, method="POST", headers={
        "Authorization": f"Bearer {stack.token}", "Content-Type": f"multipart/form-data; boundary={boundary}"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            status, answer = response.status, json.loads(response.read())
    except urllib.error.HTTPError as err:
        status, answer = err.code, json.loads(err.read())
    assert status == 202, (status, answer)
    say("API through the proxy: no-slash GET and POST, unknown parameter 400, schema format, 404: all JSON")


def _network(stack) -> str:
    done = run(["podman", "inspect", "--format", "{{range $name, $_ := .NetworkSettings.Networks}}{{$name}} {{end}}",
                stack.container("proxy")], env=stack.env)
    return done.stdout.split()[0]


def test_with_web_hanging_or_down_the_proxy_answers_504_and_502_in_json(stack, tmp_path):
    # 504: a second proxy from the same file with a 2 s read timeout (the shipped one waits 120 s), web paused.
    conf = (DOCKER / "nginx" / "lexboard.conf").read_text()
    assert "proxy_read_timeout 120s;" in conf
    (tmp_path / "short.conf").write_text(conf.replace("proxy_read_timeout 120s;", "proxy_read_timeout 2s;"))
    port, name = free_port(), f"{stack.name}-proxy-504"
    webs = [stack.container("web"), stack.container("web-2")]
    run(["podman", "run", "-d", "--name", name, "--network", _network(stack), "-p", f"127.0.0.1:{port}:80",
         "-v", f"{tmp_path / 'short.conf'}:/etc/nginx/conf.d/default.conf:ro",
         "-v", f"{DOCKER / 'nginx' / 'start.sh'}:/etc/nginx/lexboard-start.sh:ro",
         STAND_INS["LEXBOARD_PROXY_IMAGE"], "/bin/sh", "/etc/nginx/lexboard-start.sh"], env=stack.env)
    try:
        deadline = time.monotonic() + 120
        while True:  # the second proxy starting: refused connections first
            try:
                if get(f"http://127.0.0.1:{port}/api/v1/datasets/")[0] == 200:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, run(["podman", "logs", name], env=stack.env, check=False).stderr
            time.sleep(1)
        run(["podman", "pause", *webs], env=stack.env)
        try:
            error = json_error(*get(f"http://127.0.0.1:{port}/api/v1/datasets/"), 504)
            assert "did not answer in time" in error["message"], error
            status, headers, body = get(f"http://127.0.0.1:{port}/")
            assert status == 504 and headers["content-type"].startswith("text/html"), (status, headers, body[:300])
        finally:
            run(["podman", "unpause", *webs], env=stack.env, check=False)
    finally:
        subprocess.run(["podman", "rm", "-f", name], env=stack.env, capture_output=True)

    # 502: both web containers stopped; the shipped proxy answers for them, then finds them again by itself.
    stack.compose("stop", "web", "web-2")
    try:
        error = json_error(*get(f"{stack.url}/api/v1/datasets/"), 502)
        last = "\n".join(line for log in stack.full_logs("proxy").values() for line in log.splitlines()[-5:])
        assert "not answering" in error["message"] and "nothing was changed" in error["message"], (error, last)
        status, headers, body = get(f"{stack.url}/datasets/")
        assert status == 502 and headers["content-type"].startswith("text/html") and b"Retry" in body, body[:300]
    finally:
        stack.compose("start", "web", "web-2")
    stack.wait_healthz()
    logged = [line for log in stack.full_logs("proxy").values() for line in log.splitlines()
              if re.search(r'" 50[24] ', line)]
    say(f"proxy: 504 and 502 in JSON under /api/ and as a page elsewhere; access log: {len(logged)} such lines")
    assert logged, "the 502s and 504s above are in the proxy's access log"
