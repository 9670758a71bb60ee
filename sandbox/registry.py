"""Images by reference: a name in the deployment's registry, resolved to a digest, pulled by that digest.

A participant may name an image the deployment's own registry holds
(``name:tag`` or ``name@sha256:…``) instead of uploading its archive. Two
halves, neither importing Django (the services pass the settings in):

- the web process, before anything is stored: ``reference_parse`` reads the
  reference (the grammar of image references; another registry is refused,
  naming the allowed one) and ``resolve`` asks the registry's HTTP API v2 for
  the manifest (OCI or Docker v2; an image index or manifest list is narrowed
  to its linux/amd64 image), hashes the manifest's bytes (the digest is ours,
  not the registry's say-so) and sums the compressed layers, which the
  services hold to the image size cap;
- the sandbox worker: ``image_pull`` pulls ``<registry>/<name>@sha256:<manifest>``
  into the sandbox's own image store and checks that podman's image is the one
  resolved (its manifest digest and its id, the config's digest), so a tag
  moved after submission changes nothing: the digest was fixed at submission.

Reads are anonymous: the registry must let the platform read without
credentials (docs/operations.md, "A registry beside the deployment").
"""

from __future__ import annotations

import hashlib
import json
import re
import ssl
import urllib.error
import urllib.request
from dataclasses import dataclass

from . import runner

OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
INDEXES = (OCI_INDEX, DOCKER_LIST)
MANIFESTS = (OCI_MANIFEST, DOCKER_MANIFEST)
ACCEPT = ", ".join((*MANIFESTS, *INDEXES))
PLATFORM = ("linux", "amd64")
MAX_MANIFEST_BYTES = 4 * 1024 * 1024
TIMEOUT = 15.0

# The grammar of image references (github.com/distribution/reference): lower-case path components, a tag of
# up to 128 word characters, dots and dashes, a sha256 digest.
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_NAME = re.compile(rf"{_COMPONENT}(?:/{_COMPONENT})*")
_TAG = re.compile(r"[\w][\w.-]{0,127}")
_DIGEST = re.compile(r"sha256:[a-f0-9]{64}")
EXAMPLE = "bm25-example:v1"


class RegistryError(Exception):
    """A reference refused, or the registry's answer: a message for a person (what, and what to do)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class Registry:
    """The deployment's registry: ``host[:port]``; ``insecure``: no TLS verification (podman's
    ``--tls-verify=false``), plain HTTP allowed — a registry on localhost or a private network only."""

    host: str
    insecure: bool = False


@dataclass(frozen=True)
class Reference:
    """What a participant named: a repository in the registry and a tag or a digest (the digest wins)."""

    name: str
    tag: str = ""
    digest: str = ""

    def __str__(self) -> str:
        return self.name + (f":{self.tag}" if self.tag else "") + (f"@{self.digest}" if self.digest else "")


@dataclass(frozen=True)
class Resolved:
    """A reference pinned: the linux/amd64 manifest's digest, its config's digest (podman's image id) and sizes."""

    reference: Reference
    manifest_digest: str  # sha256:…, of the bytes the registry served
    config_digest: str  # sha256:…, the image id podman will report
    compressed_bytes: int  # the layers and the config as the registry stores them
    media_type: str

    def pinned(self, registry: Registry) -> str:
        """What the sandbox worker pulls: ``host/name@sha256:…``."""
        return f"{registry.host}/{self.reference.name}@{self.manifest_digest}"


def _looks_like_host(part: str) -> bool:
    # The rule of docker and podman: a first component with a dot or a colon, or "localhost", is a registry.
    return "." in part or ":" in part or part == "localhost"


def reference_parse(text: str, *, registry: Registry) -> Reference:
    """``name:tag``, ``name@sha256:…`` (or either after ``<registry host>/``) as a ``Reference``; no tag means
    ``latest``, as podman reads it. Anything else is refused with the form to write."""
    text = (text or "").strip()
    if not text:
        raise RegistryError(f"Give the image's reference in {registry.host}: NAME:TAG or NAME@sha256:DIGEST, "
                            f"e.g. {EXAMPLE}.")
    rest = text
    if "/" in rest and _looks_like_host(rest.split("/", 1)[0]):
        host, rest = rest.split("/", 1)
        if host.lower() != registry.host.lower():
            raise RegistryError(
                f"The reference {text!r} names the registry {host}; this platform only takes images from its own "
                f"registry, {registry.host}. Push the image there (podman push IMAGE {registry.host}/NAME:TAG) and "
                "give NAME:TAG.")
    digest = ""
    if "@" in rest:
        rest, digest = rest.rsplit("@", 1)
        if not _DIGEST.fullmatch(digest):
            raise RegistryError(f"The reference {text!r} has the digest {digest!r}: write sha256: and 64 lower-case "
                                "hexadecimal digits (what `podman push --digestfile` writes).")
    tag = ""
    last = rest.rsplit("/", 1)[-1]
    if ":" in last:
        rest, tag = rest.rsplit(":", 1)
        if not _TAG.fullmatch(tag):
            raise RegistryError(f"The reference {text!r} has the tag {tag!r}: a tag is up to 128 letters, digits, "
                                "underscores, dots and dashes, not starting with a dot or a dash.")
    if not _NAME.fullmatch(rest):
        raise RegistryError(
            f"The reference {text!r} does not name an image: write NAME:TAG or NAME@sha256:DIGEST (NAME in lower "
            f"case, path parts separated by /), e.g. {EXAMPLE}.")
    if not tag and not digest:
        tag = "latest"
    return Reference(name=rest, tag=tag, digest=digest)


def _sha256(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


class _Client:
    """GETs against the registry's API v2: HTTPS, or with ``insecure`` unverified HTTPS then plain HTTP."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self._schemes = ["https", "http"] if registry.insecure else ["https"]
        self._context = ssl.create_default_context()
        if registry.insecure:
            self._context.check_hostname = False
            self._context.verify_mode = ssl.CERT_NONE

    def get(self, path: str, accept: str) -> tuple[int, str, bytes]:
        """``(status, content type, body)``; a registry out of reach raises ``RegistryError``."""
        reason = ""
        for scheme in list(self._schemes):
            request = urllib.request.Request(f"{scheme}://{self.registry.host}{path}", headers={"Accept": accept})
            try:
                with urllib.request.urlopen(request, timeout=TIMEOUT, context=self._context) as response:
                    self._schemes = [scheme]  # the scheme that answered, for the next requests
                    return response.status, response.headers.get_content_type(), \
                        response.read(MAX_MANIFEST_BYTES + 1)
            except urllib.error.HTTPError as exc:
                self._schemes = [scheme]
                return exc.code, exc.headers.get_content_type() if exc.headers else "", exc.read(65536)
            except (urllib.error.URLError, OSError, ValueError) as exc:
                reason = str(getattr(exc, "reason", exc))
        raise RegistryError(
            f"The platform could not reach its registry {self.registry.host} ({reason}). Nothing was stored; try "
            "again in a few minutes, and tell the site's operators if it lasts.")


def _error_codes(body: bytes) -> str:
    try:
        errors = json.loads(body).get("errors") or []
    except (ValueError, AttributeError):
        return ""
    return ", ".join(str(e.get("code")) for e in errors if isinstance(e, dict) and e.get("code"))


def _fetch(client: _Client, ref: Reference, what: str, shown: str) -> tuple[str, bytes]:
    """The manifest (or index) ``what`` (a tag or a digest) of ``ref.name``: its media type and bytes."""
    host = client.registry.host
    status, ctype, body = client.get(f"/v2/{ref.name}/manifests/{what}", ACCEPT)
    if status == 404:
        codes = _error_codes(body)
        raise RegistryError(
            f"The registry {host} has no image {shown}{f' ({codes})' if codes else ''}. Push it first "
            f"(podman push IMAGE {host}/{shown}), check the name and the tag, and submit again.")
    if status in (401, 403):
        raise RegistryError(
            f"The registry {host} refused to let the platform read {shown} (HTTP {status}): the platform reads "
            "without credentials. Tell the site's operators (docs/operations.md, 'A registry beside the deployment').")
    if status != 200:
        raise RegistryError(f"The registry {host} answered HTTP {status} for {shown}. Nothing was stored; try again "
                            "later, and tell the site's operators if it lasts.")
    if len(body) > MAX_MANIFEST_BYTES:
        raise RegistryError(f"The manifest of {shown} is over {MAX_MANIFEST_BYTES} bytes: not an image manifest.")
    if ctype not in (*MANIFESTS, *INDEXES):
        # A registry may serve an OCI manifest as plain JSON: its own mediaType field then says what it is.
        try:
            ctype = str(json.loads(body).get("mediaType") or ctype)
        except (ValueError, AttributeError):
            pass
    if ctype not in (*MANIFESTS, *INDEXES):
        raise RegistryError(
            f"The registry serves {shown} as {ctype or 'an unknown type'}, not an OCI or Docker v2 image manifest. "
            f"Push it again with a current podman or docker (podman push IMAGE {host}/{shown}).")
    return ctype, body


def _platform_entry(index: dict, shown: str) -> dict:
    entries = [m for m in index.get("manifests") or [] if isinstance(m, dict)]
    for entry in entries:
        platform = entry.get("platform") or {}
        if (platform.get("os"), platform.get("architecture")) == PLATFORM:
            return entry
    offered = sorted({f"{(m.get('platform') or {}).get('os')}/{(m.get('platform') or {}).get('architecture')}"
                      for m in entries})
    raise RegistryError(
        f"The image {shown} is an index of images for {', '.join(offered) or 'no platform'}; the sandbox runs "
        "linux/amd64. Build for it (podman build --platform linux/amd64) and push again.")


def resolve(text: str, *, registry: Registry) -> Resolved:
    """The reference ``text`` pinned to the digest of its linux/amd64 manifest, with its compressed size.

    Refused with a ``RegistryError`` naming the reference: another registry, an unknown name or tag, a digest
    the registry's bytes do not have, an index without linux/amd64, a manifest of another kind.
    """
    ref = reference_parse(text, registry=registry)
    client = _Client(registry)
    shown = str(ref)
    ctype, body = _fetch(client, ref, ref.digest or ref.tag, shown)
    if ref.digest and _sha256(body) != ref.digest:
        raise RegistryError(f"The registry {registry.host} served bytes for {shown} whose digest is "
                            f"{_sha256(body)}, not the one asked for: the platform does not take it. Tell the site's "
                            "operators.")
    try:
        document = json.loads(body)
    except ValueError:
        raise RegistryError(f"The manifest of {shown} is not JSON.") from None
    if ctype in INDEXES:
        entry = _platform_entry(document, shown)
        digest = str(entry.get("digest") or "")
        if not _DIGEST.fullmatch(digest):
            raise RegistryError(f"The index of {shown} names its linux/amd64 image by {digest!r}, not a sha256.")
        ctype, body = _fetch(client, ref, digest, f"{ref.name}@{digest}")
        if ctype in INDEXES:
            raise RegistryError(f"The index of {shown} points to another index: push a single image.")
        if _sha256(body) != digest:
            raise RegistryError(f"The registry {registry.host} served bytes for {ref.name}@{digest} with another "
                                "digest: the platform does not take it. Tell the site's operators.")
        try:
            document = json.loads(body)
        except ValueError:
            raise RegistryError(f"The manifest of {shown} is not JSON.") from None
    config = document.get("config") or {}
    layers = document.get("layers")
    config_digest = str(config.get("digest") or "")
    if not _DIGEST.fullmatch(config_digest) or not isinstance(layers, list):
        raise RegistryError(f"The manifest of {shown} has no sha256 config or no list of layers: not an image.")
    try:
        size = int(config.get("size") or 0) + sum(int(layer.get("size") or 0) for layer in layers)
    except (TypeError, ValueError, AttributeError):
        raise RegistryError(f"The manifest of {shown} gives its layers' sizes as something other than numbers.") \
            from None
    return Resolved(reference=ref, manifest_digest=_sha256(body), config_digest=config_digest,
                    compressed_bytes=size, media_type=ctype)


# --- the sandbox worker's half -------------------------------------------------------------------------------


def image_pull(sandbox: runner.Sandbox, *, pinned: str, image_id: str, insecure: bool) -> str:
    """Pull ``host/name@sha256:…`` into the sandbox's image store; the image's id once checked.

    podman checks every blob against its digest; this checks that the image it holds is the one the web
    process resolved: pulled by that manifest digest, with that config (image id). ``insecure`` (the
    deployment's setting, never the participant's) adds ``--tls-verify=false``.
    """
    args = ["pull", "--quiet"]
    if insecure:
        args.append("--tls-verify=false")
    runner.podman(sandbox, *args, pinned, timeout=1800)
    wanted = pinned.rsplit("@", 1)[1]
    found = runner.podman(sandbox, "image", "inspect", "--format", "{{.Id}} {{.Digest}} {{json .RepoDigests}}",
                          pinned).stdout.strip()
    found_id, found_digest, repo_digests = (found.split(" ", 2) + ["", "", ""])[:3]
    expected = image_id.removeprefix("sha256:")
    if wanted != found_digest and wanted not in repo_digests:
        problem = f"the pulled image's manifest digest is {found_digest}, not {wanted}"
    elif expected and found_id.removeprefix("sha256:") != expected:
        problem = f"the pulled image's id is {found_id}, not {expected} (its config is another)"
    else:
        return found_id
    runner.image_remove(sandbox, found_id or pinned)  # not the image resolved: it never stays in the store
    raise runner.SandboxUnavailable(problem)
