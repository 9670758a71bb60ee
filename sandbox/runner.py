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
import stat
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

RUN_NAME = "run.trec"
#: The worker's variables podman is given (``Sandbox.env``): its search path, locale and configuration only.
PODMAN_ENV = ("PATH", "LANG", "LC_ALL", "TMPDIR", "XDG_RUNTIME_DIR", "XDG_CONFIG_HOME", "HOME", "CONTAINERS_CONF",
              "CONTAINERS_STORAGE_CONF", "CONTAINERS_REGISTRIES_CONF")
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
    NOT_A_FILE = "not_a_file"
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
        """podman's environment: what it needs to find itself and its configuration, nothing of the worker's.

        The worker's environment holds the database's and the broker's addresses; podman, conmon and the OCI
        runtime never need them, so they are not handed on (a process that never had a secret cannot leak it).
        """
        env = {name: os.environ[name] for name in PODMAN_ENV if name in os.environ}
        env.setdefault("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
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


def _mount_tmpfs(path: Path, *, size_bytes: int, mode: str) -> None:
    """A tmpfs of the runner's own at ``path`` (nosuid, nodev, noexec), named ``lexboard-sandbox`` in mount tables."""
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size_bytes},mode={mode},nosuid,nodev,noexec", "lexboard-sandbox",
         str(path)],
        check=True,
        capture_output=True,
    )


def _mount_output(path: Path, size_mb: int) -> None:
    # mode 0777: the container's root is an unprivileged host uid; noexec: nothing written there runs on the host.
    _mount_tmpfs(path, size_bytes=size_mb * 1024 * 1024, mode="0777")


def _stage_input(input_dir: Path, staged: Path) -> None:
    """``/input`` as the container sees it: a copy of the platform's input files on a tmpfs of its own, read-only.

    A bind mount of the host's folder would show its path in the container's mount table (the host's data
    folder, where an attacker would point next); a tmpfs root shows only ``/``. Only the regular files the
    platform wrote are copied (``lstat``: a link is not followed), mode 0644, then the mount is made read-only.
    """
    names = []
    total = 0
    for path in sorted(input_dir.iterdir()):
        info = path.lstat()
        if stat.S_ISREG(info.st_mode):
            names.append(path.name)
            total += info.st_size
    _mount_tmpfs(staged, size_bytes=total + 1024 * 1024, mode="0755")
    for name in names:
        target = staged / name
        shutil.copyfile(input_dir / name, target, follow_symlinks=False)
        target.chmod(0o644)
    subprocess.run(["mount", "-o", "remount,ro,nosuid,nodev,noexec", str(staged)], check=True, capture_output=True)


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
    staged_input = work_dir / "input"
    cidfile = work_dir / "container.id"
    _cleanup(sandbox, container, output_dir, cidfile, staged_input)
    try:
        digest = image_digest(sandbox, image)
    except SandboxUnavailable as exc:
        return Outcome(Status.PLATFORM, f"The image {image} is not in the platform's image store: {exc}")
    try:
        _stage_input(input_dir, staged_input)
        _mount_output(output_dir, limits.output_mb)
    except (OSError, subprocess.CalledProcessError) as exc:
        _cleanup(sandbox, container, output_dir, cidfile, staged_input)
        return Outcome(Status.PLATFORM, f"The platform could not prepare the run's folders: {exc}.", digest=digest)
    command = podman_run_args(sandbox=sandbox, image=image, name=container, input_dir=staged_input,
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
            try:
                outcome.run_bytes = take_run(output_dir, kept, max_bytes=limits.output_mb * 1024 * 1024)
            except RunNotTaken as exc:
                return Outcome(Status.NOT_A_FILE, (
                    f"The image exited normally but /output/{RUN_NAME} was not taken: {exc}. The sandbox takes the "
                    f"run only as a regular file written into /output: write the TREC run itself to "
                    f"/output/{RUN_NAME}."), exit_code, seconds=seconds, stderr_tail=tail,
                    peak_memory_bytes=watch.peak_memory, pids_limit_hit=watch.pids_max_hits > 0, digest=digest,
                    command=command)
            outcome.run_path = kept
        return outcome
    finally:
        _cleanup(sandbox, container, output_dir, cidfile, staged_input)


_KINDS = ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a named pipe (FIFO)"),
          (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a device node"), (stat.S_ISBLK, "a device node"))


def _run_lstat(output_dir: Path) -> os.stat_result | None:
    """What the image left at ``/output/run.trec``, never following a link; None when nothing is there."""
    try:
        return os.lstat(output_dir / RUN_NAME)
    except FileNotFoundError:
        return None


def not_a_file(info: os.stat_result) -> str | None:
    """Why what the image left as its run is not taken (a link, a pipe, a device, ...); None for a regular file
    with one name. What is named is the kind of thing, never where a link points."""
    for test, kind in _KINDS:
        if test(info.st_mode):
            return kind
    if not stat.S_ISREG(info.st_mode):
        return "not a regular file"
    if info.st_nlink != 1:
        return "a hard link (a file with more than one name)"
    return None


class RunNotTaken(Exception):
    """``take_run`` found something other than a regular file the image wrote in ``/output``, or too much of it."""


def take_run(output_dir: Path, dest: Path, *, max_bytes: int) -> int:
    """Copy the image's ``/output/run.trec`` to ``dest`` (created, mode 0600); the bytes copied.

    Opened relative to the output mount with ``O_NOFOLLOW`` and ``O_NONBLOCK`` (a link is refused by the kernel,
    a FIFO does not block), then checked on the open descriptor (``fstat``: a regular file with one name on the
    output mount itself), so nothing the image arranged in ``/output`` makes the worker read a host file; at most
    ``max_bytes`` are read (a sparse file claiming 10 GB stops there). ``RunNotTaken`` says why not.
    """
    folder = os.open(output_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        mount = os.fstat(folder)
        try:
            source = os.open(RUN_NAME, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC,
                             dir_fd=folder)
        except OSError as exc:  # ELOOP: a link; ENXIO: a socket; ENOENT: nothing
            raise RunNotTaken(f"it could not be opened as a file ({os.strerror(exc.errno or 0).lower()})") from None
    finally:
        os.close(folder)
    try:
        info = os.fstat(source)
        why = not_a_file(info)
        if why is None and info.st_dev != mount.st_dev:
            why = "not on the output mount"
        if why is not None:
            raise RunNotTaken(why)
        dest.unlink(missing_ok=True)
        target = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        copied = 0
        try:
            while chunk := os.read(source, 1 << 20):
                copied += len(chunk)
                if copied > max_bytes:
                    raise RunNotTaken(f"larger than /output's {max_bytes // (1024 * 1024)} MB")
                os.write(target, chunk)
        finally:
            os.close(target)
        return copied
    except RunNotTaken:
        dest.unlink(missing_ok=True)
        raise
    finally:
        os.close(source)


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
    run = _run_lstat(output_dir)
    regular = run is not None and stat.S_ISREG(run.st_mode)
    if _output_full(output_dir) or (regular and run is not None and run.st_size > limits.output_mb * 1024 * 1024):
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
    if run is None:
        names = sorted(p.name[:60] for p in output_dir.iterdir())[:5]
        found = f" /output holds: {', '.join(names)}." if names else " /output is empty."
        if names and not quote_stderr:
            found = " /output holds other files (not named on a software-only split)."
        return Outcome(Status.NO_RUN, (
            f"The image exited normally but wrote no /output/{RUN_NAME}.{found} Write the TREC run to "
            f"/output/{RUN_NAME}."), exit_code)
    if (kind := not_a_file(run)) is not None:
        return Outcome(Status.NOT_A_FILE, (
            f"The image exited normally but /output/{RUN_NAME} is {kind}, not a file it wrote. The sandbox takes "
            f"the run only as a regular file written into /output (never a link, a pipe or a device, which it does "
            f"not follow or read): write the TREC run itself to /output/{RUN_NAME}."), exit_code)
    return Outcome(Status.OK, "The image ran and wrote its run.", exit_code)


def _cleanup(sandbox: Sandbox, container: str, output_dir: Path, cidfile: Path,
             staged_input: Path | None = None) -> None:
    podman(sandbox, "rm", "--force", "--time=0", "--ignore", container, check=False, timeout=60)
    for mounted in (output_dir, staged_input):
        if mounted is None:
            continue
        _unmount(mounted)
        if mounted.exists():
            shutil.rmtree(mounted, ignore_errors=True)
    cidfile.unlink(missing_ok=True)


def run_remove(sandbox: Sandbox, *, name: str, work_dir: Path) -> None:
    """Remove what a run of ``name`` left (its worker died): the container, the /output mount, the work folder."""
    _cleanup(sandbox, f"{sandbox.name_prefix}{name}", work_dir / "output", work_dir / "container.id",
             work_dir / "input")


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
    for mounted in _runner_mounts(work_root):
        _unmount(mounted)
        shutil.rmtree(mounted, ignore_errors=True)
        removed.append(str(mounted))
    return removed


def _runner_mounts(work_root: Path) -> list[Path]:
    """The tmpfs mounts the runner made under ``work_root`` (``/output`` and ``/input`` of each run), from the
    mount table: a run's folders sit at any depth below it."""
    root = os.path.realpath(work_root)
    found = []
    for line in Path("/proc/self/mounts").read_text().splitlines():
        source, point, kind = (line.split(" ") + ["", "", ""])[:3]
        point = point.encode().decode("unicode_escape")  # the table writes a space as \040
        if source == "lexboard-sandbox" and kind == "tmpfs" and point.startswith(root + os.sep):
            found.append(Path(point))
    return sorted(found, key=lambda path: -len(path.parts))
