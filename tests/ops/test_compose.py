"""docker/: the compose file's services, health checks, volumes and commands; .env.example covers every setting.

What the files say, read as YAML: what tests/deploy, which builds and starts
them with podman (marker ``deploy``), cannot see — defaults it overrides (the
official images), properties it never exercises (timeouts, no root, a second
role migrating, volumes, secrets kept out), documentation. When the `docker compose` plugin is installed,
`docker compose config` validates the file too (it needs no engine).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DOCKER = ROOT / "docker"
APP_SERVICES = {"web": "web", "worker": "worker", "sweep": "sweep", "beat": "beat"}
VARIABLE = re.compile(r"\$\{(\w+):-([^}]*)\}")


def default(value: str) -> str:
    """``${NAME:-default}`` as compose reads it with NAME unset."""
    return VARIABLE.sub(lambda m: m.group(2), value)


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((DOCKER / "compose.yml").read_text())


def test_it_defines_proxy_two_webs_worker_sweep_beat_postgres_and_redis(compose):
    assert set(compose["services"]) == {"proxy", "web", "web-2", "worker", "sweep", "beat", "postgres", "redis",
                                        "sandbox"}
    # The sandbox worker starts only when asked (`--profile sandbox`): the stack runs without podman inside.
    assert [name for name, s in compose["services"].items() if s.get("profiles")] == ["sandbox"]
    assert default(compose["services"]["postgres"]["image"]) == "postgres:16"
    assert default(compose["services"]["redis"]["image"]) == "redis:7"
    assert default(compose["services"]["proxy"]["image"]).startswith("nginx:")


def test_every_image_is_a_variable_whose_default_is_the_official_image(compose):
    for name, service in compose["services"].items():
        match = VARIABLE.fullmatch(service["image"])
        assert match and match.group(1).startswith("LEXBOARD_"), f"{name}: {service['image']}"
    assert default(compose["services"]["web"]["build"]["args"]["PYTHON_IMAGE"]) == "python:3.11-slim"


def test_only_the_proxy_is_published_and_it_buffers_with_timeouts(compose):
    published = {name for name, service in compose["services"].items() if service.get("ports")}
    assert published == {"proxy"}
    assert default(compose["services"]["proxy"]["ports"][0]) == "127.0.0.1:8000:80"
    mount = compose["services"]["proxy"]["volumes"][0]
    source, target = mount.split(":")[:2]
    assert target == "/etc/nginx/conf.d/default.conf"
    conf = (DOCKER / source).read_text()
    for directive in ("client_header_timeout", "client_body_timeout", "send_timeout", "proxy_request_buffering on",
                      "proxy_buffering on", "client_max_body_size", "proxy_set_header X-Forwarded-Proto $scheme",
                      "proxy_pass http://$lexboard_web", "set $lexboard_web web:8000",
                      "include /etc/nginx/lexboard-resolver.conf", "proxy_next_upstream error timeout"):
        assert directive in conf, directive
    assert not re.search(r"^\s*upstream ", conf, re.M)  # a static upstream is resolved once, at start: a replaced web would be lost


def test_the_proxy_finds_both_web_containers_by_name_and_survives_their_replacement(compose):
    """web and web-2 both answer to `web`; the proxy re-resolves it (start.sh writes the resolver) and does not
    depend on web, which would make compose recreate the proxy whenever web is recreated."""
    services = compose["services"]
    assert services["web-2"]["networks"]["default"]["aliases"] == ["web"]
    assert {k: v for k, v in services["web-2"].items() if k != "networks"} == services["web"]
    proxy = services["proxy"]
    assert "depends_on" not in proxy
    assert proxy["command"] == ["/bin/sh", "/etc/nginx/lexboard-start.sh"]
    assert "./nginx/start.sh:/etc/nginx/lexboard-start.sh:ro" in proxy["volumes"]
    assert subprocess.run(["sh", "-n", str(DOCKER / "nginx" / "start.sh")]).returncode == 0
    assert subprocess.run(["bash", "-n", str(ROOT / "scripts" / "rolling-upgrade.sh")]).returncode == 0


def test_it_gives_every_service_a_health_check(compose):
    assert "curl" in compose["services"]["proxy"]["healthcheck"]["test"]
    for name, service in compose["services"].items():
        test = service.get("healthcheck", {}).get("test")
        assert test, f"{name} has no health check"
    for name in APP_SERVICES:
        assert compose["services"][name]["healthcheck"]["test"][-2:] == ["/app/docker/healthcheck.py", name]
    assert "pg_isready" in " ".join(compose["services"]["postgres"]["healthcheck"]["test"])
    assert "ping" in compose["services"]["redis"]["healthcheck"]["test"]


def test_the_sandbox_worker_serves_the_sandbox_queue_only_with_podman_inside(compose):
    """Participants' images never reach a scoring worker: a service of its own, its own queue and image."""
    sandbox = compose["services"]["sandbox"]
    assert sandbox["command"] == ["sandbox"] and sandbox["privileged"] is True and not sandbox.get("ports")
    assert sandbox["healthcheck"]["test"][-2:] == ["/app/docker/healthcheck.py", "sandbox"]
    assert "data:/var/lib/lexboard/data" in sandbox["volumes"] and "sandbox" in compose["volumes"]
    containerfile = (ROOT / sandbox["build"]["dockerfile"]).read_text()
    assert "podman" in containerfile and "FROM ${LEXBOARD_IMAGE}" in containerfile
    entrypoint = (DOCKER / "entrypoint.sh").read_text()
    role = entrypoint.split("  sandbox)", 1)[1].split(";;", 1)[0]
    assert '-Q "${LEXBOARD_SANDBOX_QUEUE:-${LEXBOARD_QUEUE:-lexboard}-sandbox}"' in role
    assert "sandbox_leftovers" in role
    worker = entrypoint.split("  worker)", 1)[1].split(";;", 1)[0]
    assert "sandbox" not in worker  # the scoring worker consumes the default queue only


def test_it_waits_for_healthy_database_and_broker(compose):
    for name in APP_SERVICES:
        depends = compose["services"][name]["depends_on"]
        assert depends["postgres"]["condition"] == "service_healthy"
        assert depends["redis"]["condition"] == "service_healthy"


def test_it_keeps_media_data_and_database_in_named_volumes_and_the_image_declares_none(compose):
    assert {"media", "data", "pgdata"} <= set(compose["volumes"])
    assert "pgdata:/var/lib/postgresql/data" in compose["services"]["postgres"]["volumes"]
    dockerfile = (DOCKER / "Dockerfile").read_text()
    data_dir = re.search(r"LEXBOARD_DATA_DIR=(\S+)", dockerfile).group(1)
    media_dir = re.search(r"MEDIA_ROOT=(\S+)", dockerfile).group(1)
    # A VOLUME would leave an anonymous volume behind every container that does not mount these (down --volumes
    # keeps it).
    assert not re.search(r"^VOLUME", dockerfile, re.M)
    for name in ("web", "web-2", "worker"):  # the worker reads the runs the web process stored
        volumes = compose["services"][name]["volumes"]
        assert f"data:{data_dir}" in volumes
        assert f"media:{media_dir}" in volumes


def test_it_takes_settings_from_the_env_file_next_to_the_example(compose):
    for name in (*APP_SERVICES, "postgres"):
        env_files = compose["services"][name]["env_file"]
        assert [(DOCKER / default(f)).resolve() for f in env_files] == [ROOT / ".env"]
    assert (ROOT / ".env.example").is_file()
    assert compose["services"]["web"]["environment"]["DJANGO_SETTINGS_MODULE"] == "lexboard.settings.production"


def test_it_builds_a_slim_image_that_runs_as_no_root():
    """What tests/deploy cannot see (it builds on local base images and never asks who runs the processes)."""
    dockerfile = (DOCKER / "Dockerfile").read_text()
    assert re.search(r"^ARG PYTHON_IMAGE=python:3\.11-slim\s*$", dockerfile, re.M)
    assert re.findall(r"^FROM (\S+)", dockerfile, re.M) == ["${PYTHON_IMAGE}", "${PYTHON_IMAGE}"]
    users = re.findall(r"^USER (\S+)", dockerfile, re.M)
    assert users and users[-1] not in ("root", "0")


def test_it_migrates_on_web_only():
    script = (DOCKER / "entrypoint.sh").read_text()
    assert subprocess.run(["sh", "-n", str(DOCKER / "entrypoint.sh")]).returncode == 0
    cases = dict(re.findall(r"^  (\w+)\)\n(.*?);;", script, re.M | re.S))
    # tests/deploy starts every role (web migrates and serves, the worker scores, beat is healthy); what it cannot
    # see is a second role migrating too, racing web at every start.
    assert "--migrate" in cases["web"]
    assert "--migrate" not in cases["worker"] and "--migrate" not in cases["beat"] and "--migrate" not in cases["sweep"]


def test_it_keeps_secrets_and_local_state_out_of_the_image():
    ignored = (ROOT / ".dockerignore").read_text().split()
    for entry in (".env", ".git", ".venv", "var/"):
        assert entry in ignored


def _settings_env_vars() -> set[str]:
    names: set[str] = set()
    pattern = re.compile(r"(?:env_(?:str|bool|int|list|path|rate)\(\s*|os\.environ(?:\.get)?[\[(]\s*)\"([A-Z][A-Z0-9_]*)\"")
    for path in (ROOT / "lexboard" / "settings").glob("*.py"):
        names |= set(pattern.findall(path.read_text()))
    return names


def _example_env_vars() -> set[str]:
    return set(re.findall(r"^([A-Z][A-Z0-9_]*)=", (ROOT / ".env.example").read_text(), re.M))


def test_it_documents_every_setting_read_from_the_environment_in_env_example():
    test_only = {"LEXBOARD_TEST_ID", "LEXBOARD_TEST_CACHE_PREFIX", "PYTEST_XDIST_WORKER"}  # settings/test.py
    missing = _settings_env_vars() - _example_env_vars() - test_only
    assert not missing, f"add these to .env.example with a comment: {sorted(missing)}"


def test_it_documents_every_variable_the_containers_read():
    example = _example_env_vars()
    scripts = (DOCKER / "entrypoint.sh").read_text() + (DOCKER / "wait_for_db.py").read_text()
    used = set(re.findall(r"\$\{([A-Z][A-Z0-9_]*)[:}]", scripts))
    used |= set(re.findall(r"os\.environ\.get\(\"([A-Z][A-Z0-9_]*)\"", scripts))
    used |= set(re.findall(r"\$\{([A-Z][A-Z0-9_]*)[:-]", (DOCKER / "compose.yml").read_text()))
    assert not used - example, f"add these to .env.example: {sorted(used - example)}"


def _docker_compose() -> list[str] | None:
    if shutil.which("docker"):
        probe = subprocess.run(["docker", "compose", "version"], capture_output=True, text=True)
        if probe.returncode == 0:
            return ["docker", "compose"]
    return None


def test_it_is_a_valid_compose_file_for_docker_compose(tmp_path):
    command = _docker_compose()
    if command is None:
        pytest.skip("the docker compose plugin is not installed; the structure tests above still ran")
    # A copy with the example settings as its .env, so the check needs no secrets.
    (tmp_path / "docker").mkdir()
    shutil.copy(DOCKER / "compose.yml", tmp_path / "docker" / "compose.yml")
    shutil.copy(DOCKER / "Dockerfile", tmp_path / "docker" / "Dockerfile")
    shutil.copy(ROOT / ".env.example", tmp_path / ".env")
    result = subprocess.run(
        [*command, "--env-file", str(tmp_path / ".env"), "-f", str(tmp_path / "docker" / "compose.yml"), "config", "--quiet"],
        capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 0, result.stderr
