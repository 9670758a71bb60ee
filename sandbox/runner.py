"""The one place that starts a participant's container: podman, locked down, with every outcome named.

``run_image`` runs an image once in a fresh container and returns an ``Outcome``
whose status and message a person can act on. What the container gets:

- no network (``--network=none``: loopback only), no added capability
  (``--cap-drop=ALL``), ``no-new-privileges``, podman's default seccomp profile
  (never switched off), its own user namespace (the container's root is an
  unprivileged host uid: ``Sandbox.userns``);
- a read-only root file system, ``/input`` mounted read-only, a size-capped
  ``/output`` (a tmpfs the runner mounts on the host, so the run survives the
  container) and a size-capped in-container tmpfs ``/tmp``; nothing else is
  writable (``--read-only-tmpfs=false``: no writable ``/run`` or ``/var/tmp``);
- memory (swap included), CPU and process-count limits, and a wall time after
  which it is killed;
- no environment of the worker (podman passes none unless asked), no logs on
  the host's disk (``--log-driver=none``; stderr's last KiB kept in memory).

The container is removed after, and so is the ``/output`` mount, whatever
happened (the ``finally`` below; ``sandbox_leftovers_remove`` clears what a
killed worker left). It needs root on the host: mounting the output tmpfs and
podman's rootful storage with an explicit uid map (docs/sandbox.md says why
this and not ``--userns=auto`` or rootless podman here).

This module imports no Django: the tasks pass settings in as ``Sandbox`` and
``Limits``; the hostile-image tests call it directly.
"""

from __future__ import annotations

import enum
import os
import re
import shutil
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

RUN_NAME = "run.trec"
STDERR_TAIL_BYTES = 2048
# What a process without network says when it tries (glibc, Python, curl, bash's /dev/tcp).
_NETWORK_WORDS = re.compile(
    r"Network is unreachable|Temporary failure in name resolution|Name or service not known|"
    r"Could not resolve host|No address associated with hostname|nodename nor servname|"
    r"ENETUNREACH|EAI_AGAIN|getaddrinfo failed",
    re.IGNORECASE,
)
_DISK_FULL_WORDS = re.compile(r"No space left on device|ENOSPC|Disk quota exceeded", re.IGNORECASE)


class Status(enum.StrEnum):
    """How a sandboxed run ended; stored on the run, so the values are part of the database."""

    OK = "ok"
    TIMEOUT = "timeout"
    OOM = "oom"
    PIDS = "pids"
    DISK_FULL = "disk_full"
    OUTPUT_TOO_LARGE = "output_too_large"
    NO_RUN = "no_run"
    NETWORK = "network"
    FAILED = "failed"
    CANCELLED = "cancelled"
    PLATFORM = "platform_error"


@dataclass(frozen=True)
class Limits:
    """What one run may use; curators set them per split (the defaults are the site's)."""

    memory_mb: int = 2048
    cpus: float = 1.0
    pids: int = 256
    wall_seconds: int = 1800
    output_mb: int = 512
    tmp_mb: int = 512

    def describe(self) -> str:
        return (
            f"{self.memory_mb} MB memory, {self.cpus:g} CPU, {self.pids} processes, "
            f"{self.wall_seconds} s wall time, {self.output_mb} MB /output, {self.tmp_mb} MB /tmp"
        )


@dataclass(frozen=True)
class Sandbox:
    """How this host runs containers: the podman binary, its configuration, the user namespace.

    ``storage_root``: a podman image store of the sandbox's own (``--root``),
    so a participant's archive never re-tags an image of the host's store (an
    archive may carry any name, ``postgres:16`` too); images are run by id.

    ``uid_base``/``uid_count``: the host uids the container's uids 0..count-1 map
    to (``--uidmap 0:base:count``, the same for gids). Pick a range no host user
    or other subordinate range uses; one fixed range lets podman keep one
    id-shifted copy of each image instead of one per run.
    """

    podman: str = "podman"
    containers_conf: str | None = None
    uid_base: int = 1_000_000_000
    uid_count: int = 65536
    name_prefix: str = "lexboard-sandbox-"
    storage_root: str | None = None

    def base_args(self) -> list[str]:
        if not self.storage_root:
            return [self.podman]
        return [self.podman, f"--root={self.storage_root}/storage", f"--runroot={self.storage_root}/run"]

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        if self.containers_conf:
            env["CONTAINERS_CONF"] = self.containers_conf
        return env

    def userns_args(self) -> list[str]:
        spec = f"0:{self.uid_base}:{self.uid_count}"
        return [f"--uidmap={spec}", f"--gidmap={spec}"]


@dataclass
class Outcome:
    """What happened: the status, a message for a person, and what was measured."""

    status: Status
    message: str
    exit_code: int | None = None
    seconds: float = 0.0
    stderr_tail: str = ""
    run_path: Path | None = None
    run_bytes: int = 0
    peak_memory_bytes: int | None = None
    pids_limit_hit: bool = False
    digest: str = ""
    command: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status is Status.OK


class SandboxUnavailable(Exception):
    """The host cannot run containers (no podman, not root): a platform problem, not the image's."""


def default_containers_conf(project_dir: Path) -> str | None:
    """The project's containers.conf unless this machine configured podman itself (scripts/podman-env.sh's rule)."""
    if os.environ.get("CONTAINERS_CONF"):
        return os.environ["CONTAINERS_CONF"]
    user_conf = Path(os.environ.get("XDG_CONFIG_HOME", Path.home() / ".config")) / "containers/containers.conf"
    if Path("/etc/containers/containers.conf").exists() or user_conf.exists():
        return None
    return str(project_dir / "docker/podman/containers.conf")


def available(sandbox: Sandbox) -> str | None:
    """None when this host can run sandboxed images, else why not (for skips and the worker's start-up)."""
    if shutil.which(sandbox.podman) is None:
        return f"{sandbox.podman} is not installed (apt-get install podman runc)"
    if os.geteuid() != 0:
        return "the sandbox runner needs root (it mounts the size-capped /output and maps a uid range)"
    return None


def podman(sandbox: Sandbox, *args: str, timeout: float = 120, check: bool = True) -> subprocess.CompletedProcess[str]:
    """One podman command, its output as text; a failure raises SandboxUnavailable with podman's words."""
    proc = subprocess.run(
        [*sandbox.base_args(), *args], capture_output=True, text=True, timeout=timeout, env=sandbox.env(), check=False
    )
    if check and proc.returncode != 0:
        raise SandboxUnavailable(f"podman {args[0]} failed: {proc.stderr.strip()[-500:]}")
    return proc


def image_digest(sandbox: Sandbox, image: str) -> str:
    """The image's id (sha256 of its config): what a re-run must find again."""
    return podman(sandbox, "image", "inspect", "--format", "{{.Id}}", image).stdout.strip()


class _Tail:
    """Reads a pipe to its end, keeping only its last bytes (a container may write gigabytes to stderr)."""

    def __init__(self, pipe: Any, keep: int) -> None:
        self._chunks: deque[bytes] = deque()
        self._size = 0
        self._keep = keep
        self._thread = threading.Thread(target=self._drain, args=(pipe,), daemon=True)
        self._thread.start()

    def _drain(self, pipe: Any) -> None:
        for chunk in iter(lambda: pipe.read1(65536), b""):
            self._chunks.append(chunk)
            self._size += len(chunk)
            while self._size - len(self._chunks[0]) >= self._keep:
                self._size -= len(self._chunks.popleft())

    def text(self) -> str:
        self._thread.join(timeout=5)
        data = b"".join(self._chunks)[-self._keep :]
        return data.decode("utf-8", "replace")


class _CgroupWatch:
    """Polls the container's cgroup for its peak memory and whether it hit its process limit.

    The cgroup disappears with the container, so the values are read while it
    runs (every 0.2 s); cgroup v1 (per-controller folders) and v2 are read.
    """

    def __init__(self, sandbox: Sandbox, cidfile: Path) -> None:
        self.peak_memory: int | None = None
        self.pids_max_hits = 0
        self._sandbox = sandbox
        self._cidfile = cidfile
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _files(self) -> tuple[list[Path], list[Path]]:
        cid = ""
        while not self._stop.is_set() and not cid:
            cid = self._cidfile.read_text().strip() if self._cidfile.exists() else ""
            if not cid:
                time.sleep(0.05)
        if not cid:
            return [], []
        relative = ""
        for _ in range(50):  # the cgroup exists once the container started
            proc = podman(self._sandbox, "inspect", "--format", "{{.State.CgroupPath}}", cid, check=False, timeout=10)
            relative = proc.stdout.strip().lstrip("/")
            if relative or self._stop.wait(0.1):
                break
        if not relative:  # gone already (or never started): the host's root cgroup is not the container's
            return [], []
        root = Path("/sys/fs/cgroup")
        memory = [root / "memory" / relative / "memory.max_usage_in_bytes", root / relative / "memory.peak"]
        pids = [root / "pids" / relative / "pids.events", root / relative / "pids.events"]
        return memory, pids

    def _watch(self) -> None:
        memory, pids = self._files()
        while memory:
            for path in memory:
                try:
                    self.peak_memory = max(self.peak_memory or 0, int(path.read_text().split()[0]))
                except (OSError, ValueError, IndexError):
                    continue
            for path in pids:
                try:
                    for line in path.read_text().splitlines():
                        key, _, value = line.partition(" ")
                        if key == "max":
                            self.pids_max_hits = max(self.pids_max_hits, int(value))
                except (OSError, ValueError):
                    continue
            if self._stop.wait(0.2):
                break

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=15)


def _mount_output(path: Path, size_mb: int) -> None:
    path.mkdir(parents=True, exist_ok=True)
    # mode 0777: the container's root is an unprivileged host uid; noexec: nothing written there runs on the host.
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size_mb}m,mode=0777,nosuid,nodev,noexec", "lexboard-sandbox", str(path)],
        check=True,
        capture_output=True,
    )


def _unmount(path: Path) -> None:
    if os.path.ismount(path):
        subprocess.run(["umount", "-l", str(path)], check=False, capture_output=True)


def _output_full(path: Path) -> bool:
    stats = os.statvfs(path)
    return stats.f_bavail * stats.f_frsize < 64 * 1024


def podman_run_args(*, sandbox: Sandbox, image: str, name: str, input_dir: Path, output_dir: Path,
                    cidfile: Path, limits: Limits) -> list[str]:
    """The podman command line: every restriction of the module docstring, in one list the tests read."""
    return [
        *sandbox.base_args(), "run",
        f"--name={name}",
        f"--cidfile={cidfile}",
        "--label=lexboard.sandbox=1",
        "--pull=never",
        "--network=none",
        "--read-only",
        "--read-only-tmpfs=false",
        f"--volume={input_dir}:/input:ro",
        f"--volume={output_dir}:/output:rw",
        f"--tmpfs=/tmp:rw,size={limits.tmp_mb}m,mode=1777,nosuid,nodev",
        f"--memory={limits.memory_mb}m",
        f"--memory-swap={limits.memory_mb}m",
        f"--cpus={limits.cpus:g}",
        f"--pids-limit={limits.pids}",
        "--shm-size=16m",
        "--cap-drop=ALL",
        "--security-opt=no-new-privileges",
        *sandbox.userns_args(),
        "--hostname=sandbox",
        "--log-driver=none",
        "--stop-timeout=1",
        "--interactive=false",
        image,
    ]


def image_load(sandbox: Sandbox, archive: Path) -> str:
    """Load an OCI or Docker archive into the sandbox's store; its image id (what ``run_image`` is given)."""
    loaded = podman(sandbox, "load", "--quiet", "--input", str(archive), timeout=1800).stdout
    names = [line.split(":", 1)[1].strip() for line in loaded.splitlines() if line.startswith("Loaded image")]
    if not names:
        raise SandboxUnavailable(f"podman load named no image: {loaded.strip()[-300:]}")
    return image_digest(sandbox, names[0].split(",")[0].strip())


def image_remove(sandbox: Sandbox, image_id: str) -> None:
    podman(sandbox, "rmi", "--force", image_id, check=False, timeout=300)


def run_image(*, sandbox: Sandbox, image: str, input_dir: Path, work_dir: Path, limits: Limits,
              name: str, cancelled: Callable[[], bool] | None = None, quote_stderr: bool = True) -> Outcome:
    """Run ``image`` once on ``input_dir``; the run (if any) is copied to ``work_dir/run.trec``.

    ``cancelled`` is asked every second while the container runs: True stops
    it (status ``cancelled``). ``quote_stderr=False`` keeps the image's own
    words out of the message (a software-only split: the image has read the
    hidden topics and could print them); ``stderr_tail`` still has them.

    ``name`` identifies the run (the container is ``<prefix><name>``): a
    container or mount left by an earlier attempt with the same name is removed
    first, so a retried task starts clean.
    """
    refusal = available(sandbox)
    if refusal:
        return Outcome(Status.PLATFORM, f"The platform cannot run images here: {refusal}.")
    container = f"{sandbox.name_prefix}{name}"
    work_dir.mkdir(parents=True, exist_ok=True)
    output_dir = work_dir / "output"
    cidfile = work_dir / "container.id"
    _cleanup(sandbox, container, output_dir, cidfile)
    try:
        digest = image_digest(sandbox, image)
    except SandboxUnavailable as exc:
        return Outcome(Status.PLATFORM, f"The image {image} is not in the platform's image store: {exc}")
    _mount_output(output_dir, limits.output_mb)
    command = podman_run_args(sandbox=sandbox, image=image, name=container, input_dir=input_dir,
                              output_dir=output_dir, cidfile=cidfile, limits=limits)
    try:
        started = time.monotonic()
        # In the run's folder: conmon writes an "oom" file into its working directory when the memory limit
        # kills the container (podman 4.3 without a persist directory), which must not land in the worker's.
        proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=sandbox.env(), cwd=work_dir)
        stdout_tail = _Tail(proc.stdout, STDERR_TAIL_BYTES)
        stderr_tail = _Tail(proc.stderr, STDERR_TAIL_BYTES)
        watch = _CgroupWatch(sandbox, cidfile)
        timed_out = was_cancelled = False
        deadline = started + limits.wall_seconds
        while proc.poll() is None:
            try:
                proc.wait(timeout=max(0.0, min(1.0, deadline - time.monotonic())))
            except subprocess.TimeoutExpired:
                pass
            if proc.poll() is not None:
                break
            was_cancelled = cancelled is not None and cancelled()
            timed_out = time.monotonic() >= deadline
            if was_cancelled or timed_out:
                break
        if was_cancelled or timed_out:
            podman(sandbox, "kill", container, check=False, timeout=30)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        seconds = time.monotonic() - started
        watch.stop()
        state = podman(sandbox, "inspect", "--format", "{{.State.ExitCode}} {{.State.OOMKilled}}", container,
                       check=False, timeout=30).stdout.split()
        exit_code = int(state[0]) if state else proc.returncode
        oom = len(state) > 1 and state[1] == "true"
        tail = stderr_tail.text() or stdout_tail.text()
        if was_cancelled:
            return Outcome(Status.CANCELLED, "Cancelled while it ran: its container was stopped and removed.",
                           seconds=seconds, digest=digest)
        outcome = _classify(limits=limits, timed_out=timed_out, oom=oom, exit_code=exit_code,
                            pids_hit=watch.pids_max_hits > 0, stderr=tail, output_dir=output_dir,
                            quote_stderr=quote_stderr)
        outcome.seconds = seconds
        outcome.stderr_tail = tail
        outcome.peak_memory_bytes = watch.peak_memory
        outcome.pids_limit_hit = watch.pids_max_hits > 0
        outcome.digest = digest
        outcome.command = command
        if outcome.ok:
            kept = work_dir / RUN_NAME
            shutil.copyfile(output_dir / RUN_NAME, kept)
            outcome.run_path = kept
            outcome.run_bytes = kept.stat().st_size
        return outcome
    finally:
        _cleanup(sandbox, container, output_dir, cidfile)


def _classify(*, limits: Limits, timed_out: bool, oom: bool, exit_code: int | None, pids_hit: bool,
              stderr: str, output_dir: Path, quote_stderr: bool = True) -> Outcome:
    """Name what happened, the most specific cause first; every message says what to change."""
    last = stderr.strip().splitlines()[-1][:300] if stderr.strip() else ""
    said = f' Its last words: "{last}".' if last and quote_stderr else ""
    if last and not quote_stderr:
        said = " (Its output is not shown on a software-only split: the curators can read it.)"
    if timed_out:
        if pids_hit:
            return Outcome(Status.PIDS, (
                f"The image kept starting processes past the limit of {limits.pids} and was stopped after "
                f"{limits.wall_seconds} s (a fork bomb, or a pool too large). Use fewer processes or threads."),
                exit_code)
        return Outcome(Status.TIMEOUT, (
            f"The image ran past its wall time of {limits.wall_seconds} s and was stopped. Make it faster "
            f"(fewer documents re-read, a smaller index), or ask the curators for a longer limit.{said}"), exit_code)
    if oom or (exit_code == 137 and not timed_out):
        return Outcome(Status.OOM, (
            f"The image used more than its {limits.memory_mb} MB of memory (files in /tmp count too) and was "
            f"killed. Stream the corpus instead of holding it whole, or use a smaller model."), exit_code)
    run = output_dir / RUN_NAME
    if _output_full(output_dir) or (run.exists() and run.stat().st_size > limits.output_mb * 1024 * 1024):
        return Outcome(Status.OUTPUT_TOO_LARGE, (
            f"The image filled /output's {limits.output_mb} MB. A run rarely needs more than 1000 documents "
            f"per topic: cut each topic's ranking (e.g. to the top 1000)."), exit_code)
    if exit_code != 0:
        if pids_hit:
            return Outcome(Status.PIDS, (
                f"The image reached its limit of {limits.pids} processes and exited with status {exit_code}. "
                f"Use fewer processes or threads.{said}"), exit_code)
        if _DISK_FULL_WORDS.search(stderr):
            return Outcome(Status.DISK_FULL, (
                f"The image ran out of disk space (exit status {exit_code}): only /tmp ({limits.tmp_mb} MB) and "
                f"/output ({limits.output_mb} MB) are writable, the rest is read-only.{said}"), exit_code)
        if _NETWORK_WORDS.search(stderr):
            return Outcome(Status.NETWORK, (
                f"The image tried to use the network, which the sandbox does not have (exit status {exit_code}). "
                f"Put models and data in the image when you build it.{said}"), exit_code)
        return Outcome(Status.FAILED, f"The image exited with status {exit_code}.{said}", exit_code)
    if not run.is_file():
        names = sorted(p.name for p in output_dir.iterdir())[:5]
        found = f" /output holds: {', '.join(names)}." if names else " /output is empty."
        return Outcome(Status.NO_RUN, (
            f"The image exited normally but wrote no /output/{RUN_NAME}.{found} Write the TREC run to "
            f"/output/{RUN_NAME}."), exit_code)
    return Outcome(Status.OK, "The image ran and wrote its run.", exit_code)


def _cleanup(sandbox: Sandbox, container: str, output_dir: Path, cidfile: Path) -> None:
    podman(sandbox, "rm", "--force", "--time=0", "--ignore", container, check=False, timeout=60)
    _unmount(output_dir)
    if output_dir.exists():
        shutil.rmtree(output_dir, ignore_errors=True)
    cidfile.unlink(missing_ok=True)


def run_remove(sandbox: Sandbox, *, name: str, work_dir: Path) -> None:
    """Remove what a run of ``name`` left (its worker died): the container, the /output mount, the work folder."""
    _cleanup(sandbox, f"{sandbox.name_prefix}{name}", work_dir / "output", work_dir / "container.id")


def leftovers_remove(sandbox: Sandbox, work_root: Path) -> list[str]:
    """Remove the sandbox containers and /output mounts that no run owns any more (a killed worker's).

    Call it where no run is in progress (a sandbox worker's start-up): it
    removes every container carrying the sandbox label.
    """
    removed = []
    proc = podman(sandbox, "ps", "--all", "--filter", "label=lexboard.sandbox=1", "--format", "{{.Names}}",
                  check=False, timeout=60)
    for container in proc.stdout.split():
        podman(sandbox, "rm", "--force", "--time=0", "--ignore", container, check=False, timeout=60)
        removed.append(container)
    if work_root.exists():
        for output_dir in work_root.glob("*/output"):
            _unmount(output_dir)
            shutil.rmtree(output_dir, ignore_errors=True)
            removed.append(str(output_dir))
    return removed
