"""The proxy's own answers, from Debian's nginx running docker/nginx/lexboard.conf itself (no containers, a second).

The shipped file is rendered for a temporary prefix (`render`: its server block four times, on four free ports of
127.0.0.1, in front of four upstreams) and started as a fixture:

- ``live``: a tiny HTTP upstream in this process that answers with the Host it was sent, breaks off on
  ``/api/break`` and never answers ``/api/hang`` (the read timeout rendered at 1 s instead of 120 s);
- ``refused``: a port nothing listens on;
- ``dropped``: a socket whose accept queue is full, so the kernel drops the connection attempt (a removed
  container's address: the connect times out, nginx's 504);
- ``unresolved``: a name a tiny DNS server in this process answers NXDOMAIN for (every web container stopped: the
  container network's DNS no longer knows ``web``), so nginx connects nowhere.

Everything nginx answers itself under /api/ is the API's error shape (api/errors.py); a failure that sent nothing to
the web tier is a 502 saying nothing was changed; the Host header keeps its port, so the API's links do too.
The composed stack (podman) is tests/deploy/test_proxy_errors.py.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.ports import free_port

ROOT = Path(__file__).resolve().parents[2]
CONF = ROOT / "docker" / "nginx" / "lexboard.conf"
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
SHAPE = {"message", "details"}

pytestmark = pytest.mark.skipif(not os.access(NGINX, os.X_OK),
                                reason="Debian's nginx is not installed (apt-get install nginx-light; .ci/run does)")


def _replace(text: str, old: str, new: str) -> str:
    assert old in text, f"docker/nginx/lexboard.conf no longer has {old!r}: update render() in {__file__}"
    return text.replace(old, new)


def render(conf: str, prefix: Path, servers: dict[int, str], *, read_timeout: str = "1s",
           resolvers: dict[int, str] | None = None) -> str:
    """The shipped file as a whole nginx.conf under ``prefix``: its maps once, its server block once per
    ``{port: upstream address}`` (an upstream name resolved by ``resolvers[port]``, a DNS server's address), the
    read timeout shortened; nothing else of it changed."""
    head, server = conf[:conf.index("server {")], conf[conf.index("server {"):]
    server = _replace(server, "/var/log/nginx/access.log", str(prefix / "access.log"))
    server = _replace(server, "include /etc/nginx/lexboard-resolver.conf;", "")  # upstreams are addresses here
    server = _replace(server, "proxy_read_timeout 120s;", f"proxy_read_timeout {read_timeout};")
    resolvers = resolvers or {}
    blocks = [_replace(_replace(server, "listen 80 default_server;", f"listen 127.0.0.1:{port};"),
                       "set $lexboard_web web:8000;",
                       (f"resolver {resolvers[port]} valid=2s; " if port in resolvers else "")
                       + f"set $lexboard_web {upstream};")
              for port, upstream in servers.items()]
    temp = " ".join(f"{kind}_temp_path {prefix / kind};" for kind in ("client_body", "proxy", "fastcgi", "uwsgi",
                                                                       "scgi"))
    user = "user root;\n" if os.geteuid() == 0 else ""  # workers as root: the temporary prefix is the test's own
    return (f"{user}daemon off;\npid {prefix / 'nginx.pid'};\nerror_log {prefix / 'error.log'} info;\n"
            f"events {{ worker_connections 128; }}\nhttp {{\n{temp}\n{head}\n{''.join(blocks)}\n}}\n")


class Upstream(BaseHTTPRequestHandler):
    """The web tier's stand-in: the Host it was sent, as JSON; /api/break closes without answering; /api/hang
    answers after the proxy gave up (and so does /hang)."""

    protocol_version = "HTTP/1.1"

    def do_GET(self):  # noqa: N802 (http.server's name)
        if self.path.startswith("/api/break"):
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if self.path.endswith("/hang"):
            time.sleep(3)
        body = json.dumps({"host": self.headers.get("Host"), "path": self.path}).encode()
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except OSError:  # /hang: the proxy gave up and closed the connection; nothing to say
            self.close_connection = True

    do_POST = do_GET  # noqa: N815

    def finish(self):
        try:
            super().finish()
        except OSError:  # /api/break shut its connection already
            pass

    def log_message(self, *args):
        pass


def _no_such_name(sock: socket.socket) -> None:
    """A DNS server that answers every question with NXDOMAIN (its header's flags 0x8183, the question echoed)."""
    while True:
        try:
            data, addr = sock.recvfrom(512)
        except OSError:  # closed at the fixture's end
            return
        sock.sendto(data[:2] + b"\x81\x83" + data[4:6] + b"\x00" * 6 + data[12:], addr)


@pytest.fixture(scope="module")
def proxy(tmp_path_factory):
    prefix = tmp_path_factory.mktemp("nginx")
    upstream = ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    # The handlers are joined when the fixture ends (server_close): a /hang handler left running wrote to the
    # connection the proxy had closed, and the traceback it printed, during the next test file on this worker,
    # raced that file's import in CPython 3.11's AST state, shared by all threads (a "SystemError: AST constructor
    # recursion depth mismatch" in pytest's assertion rewriting, CI of 7 December 2026).
    upstream.daemon_threads = False
    upstream.block_on_close = True
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    # A full accept queue: with a backlog of 0 the first connection fills it, and the kernel drops the next SYNs.
    dropped = socket.socket()
    dropped.bind(("127.0.0.1", 0))
    dropped.listen(0)
    fillers = []
    for _ in range(3):
        filler = socket.socket()
        filler.setblocking(False)
        filler.connect_ex(dropped.getsockname())
        fillers.append(filler)
    dns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    dns.bind(("127.0.0.1", 0))
    threading.Thread(target=_no_such_name, args=(dns,), daemon=True).start()
    ports = {"live": free_port(), "refused": free_port(), "dropped": free_port(), "unresolved": free_port()}
    servers = {ports["live"]: f"127.0.0.1:{upstream.server_address[1]}", ports["refused"]: f"127.0.0.1:{free_port()}",
               ports["dropped"]: f"127.0.0.1:{dropped.getsockname()[1]}"}
    servers[ports["unresolved"]] = "web.invalid:8000"
    resolvers = {ports["unresolved"]: f"127.0.0.1:{dns.getsockname()[1]}"}
    (prefix / "nginx.conf").write_text(render(CONF.read_text(), prefix, servers, resolvers=resolvers))
    process = subprocess.Popen([NGINX, "-p", str(prefix), "-e", str(prefix / "error.log"), "-c",
                                str(prefix / "nginx.conf")], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 10
        while True:
            assert process.poll() is None, f"nginx exited: {process.stdout.read().decode()}"
            try:
                socket.create_connection(("127.0.0.1", ports["dropped"]), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, (prefix / "error.log").read_text()
                time.sleep(0.05)
        yield ports
    finally:
        process.terminate()
        process.wait(timeout=10)
        upstream.shutdown()
        upstream.server_close()  # joins every handler, /hang's too (3 s at most)
        for sock in (dropped, *fillers, dns):
            sock.close()


def exchange(port: int, data: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send bytes as they are; the status, headers and body nginx answered. Read until the body's Content-Length
    is in, not until nginx closes: after refusing a body it keeps reading the rest for 5 s (lingering close)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(data)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
            head, sep, body = answer.partition(b"\r\n\r\n")
            length = re.search(rb"(?im)^content-length: *([0-9]+)", head)
            if sep and length and len(body) >= int(length.group(1)):
                break
    head, _, body = answer.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:])}
    return int(lines[0].split()[1]), headers, body


def request(port: int, target: str, method: str = "GET", extra: str = "", body: bytes = b"") -> bytes:
    return (f"{method} {target} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n{extra}\r\n").encode() + body


def api_error(answer: tuple[int, dict[str, str], bytes], status: int) -> str:
    """The answer is ``status`` in the API's error shape (api/errors.py's ``error_body``); its message."""
    code, headers, body = answer
    assert code == status, (code, headers, body[:400])
    assert headers["content-type"].startswith("application/json"), (headers, body[:400])
    assert headers["cache-control"] == "no-store", headers
    error = json.loads(body)["error"]
    assert set(error) == SHAPE and all(set(d) == {"line", "reason"} for d in error["details"]), error
    assert error["details"][0]["reason"].endswith(f"status {status}"), error
    return error["message"]


def test_every_refusal_of_nginx_itself_under_api_is_the_api_error_shape(proxy):
    live = proxy["live"]
    message = api_error(exchange(live, request(live, "/api/%")), 400)  # the URI cannot be decoded
    assert "address (URI) could not be read" in message and "%25" in message, message
    message = api_error(exchange(live, request(live, "/api/v1/submissions/%zz/")), 400)
    assert "address (URI) could not be read" in message, message
    message = api_error(exchange(live, request(live, "/api/v1/", extra="X-Big: " + "a" * 20000 + "\r\n")), 400)
    assert "16 KiB" in message and "header" in message, message
    message = api_error(exchange(live, request(live, "/api/v1/?q=" + "a" * 20000)), 414)
    assert "request line" in message and "16 KiB" in message, message
    message = api_error(exchange(live, request(live, "/api/v1/submissions/", "POST",
                                               "Content-Length: 300000000\r\n", b"x")), 413)
    assert "210 MiB" in message and "gzip" in message, message
    message = api_error(exchange(live, request(live, "/api/v1/", "TRACE")), 405)
    assert "TRACE" in message, message
    message = api_error(exchange(live, request(live, "/api/v1/", "POST", "Transfer-Encoding: gzip\r\n")), 501)
    assert "Transfer-Encoding" in message, message
    # nginx's own 404: the error pages are internal, and an /api/ address that climbs to one is refused by nginx.
    message = api_error(exchange(live, request(live, "/api/../.lexboard-error/api/status")), 404)
    assert "/api/v1/" in message, message
    # Everything else goes to the application, whatever its status: nginx adds nothing.
    status, headers, body = exchange(live, request(live, "/api/v1/nothing-here/"))
    assert status == 200 and json.loads(body)["path"] == "/api/v1/nothing-here/", body


def test_outside_api_the_same_refusals_are_a_short_page(proxy):
    live = proxy["live"]
    for target, status in (("/%", 400), ("/d/?q=" + "a" * 20000, 414), ("/d/../.lexboard-error/page/status", 404)):
        code, headers, body = exchange(live, request(live, target))
        assert code == status and headers["content-type"].startswith("text/html"), (target, code, headers)
        assert f"<h1>Error {status}</h1>" in body.decode(), body[:300]


def test_nothing_sent_to_the_web_tier_is_a_502_saying_nothing_was_changed(proxy):
    # refused: nginx's 502; the connect timed out: nginx's 504, answered 502; a name that does not resolve: a 502
    # with no upstream tried at all ($upstream_bytes_sent empty: the proxy once called it "broke off")
    for name in ("refused", "dropped", "unresolved"):
        port = proxy[name]
        for method in ("GET", "POST"):
            message = api_error(exchange(port, request(port, "/api/v1/submissions/", method,
                                                       "Content-Length: 2\r\n", b"{}")), 502)
            assert "not answering" in message and "nothing was changed" in message, (name, method, message)
        status, headers, body = exchange(port, request(port, "/datasets/"))
        assert status == 502 and headers["content-type"].startswith("text/html"), (name, status, headers)
        assert b"nothing was changed" in body, body


def test_a_request_the_web_tier_had_may_have_been_applied(proxy):
    live = proxy["live"]
    message = api_error(exchange(live, request(live, "/api/hang")), 504)  # no answer within proxy_read_timeout
    assert "did not answer in time" in message and "may or may not have been applied" in message, message
    message = api_error(exchange(live, request(live, "/api/break")), 502)  # the connection closed, no answer
    assert "may or may not have been applied" in message and "nothing was changed" not in message, message
    status, headers, body = exchange(live, request(live, "/hang"))
    assert status == 504 and headers["content-type"].startswith("text/html"), (status, headers)


def test_the_host_keeps_its_port_so_the_apis_links_lead_back_through_the_proxy(proxy, client, tiny_dataset):
    live = proxy["live"]
    status, _, body = exchange(live, request(live, "/api/v1/submissions/"))
    sent = json.loads(body)["host"]
    assert status == 200 and sent == f"127.0.0.1:{live}", sent
    # What Django builds from that Host: the links of an API answer keep the port.
    response = client.get("/api/v1/datasets/", HTTP_HOST=sent)
    assert response.status_code == 200, response.content[:300]
    links = [v for v in json.dumps(response.json()).split('"') if v.startswith("http")]
    assert links and all(link.startswith(f"http://{sent}/") for link in links), links[:5]
