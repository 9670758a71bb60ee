"""Image references read as podman reads them, against the deployment's registry (no registry, no podman needed:
the live registry is tests/sandbox/test_registry.py's)."""

from __future__ import annotations

import pytest

from sandbox.registry import Reference, Registry, RegistryError, reference_parse

REGISTRY = Registry(host="127.0.0.1:5000", insecure=True)
DIGEST = "sha256:" + "ab" * 32


@pytest.mark.parametrize(("text", "expected"), [
    ("bm25-example:v1", Reference("bm25-example", "v1")),
    ("bm25-example", Reference("bm25-example", "latest")),  # no tag: latest, as podman reads it
    (f"team/bm25@{DIGEST}", Reference("team/bm25", "", DIGEST)),
    (f"team/bm25:v2@{DIGEST}", Reference("team/bm25", "v2", DIGEST)),
    ("127.0.0.1:5000/team/bm25:v1", Reference("team/bm25", "v1")),  # the site's own registry, written out
    ("  my-team_x/e__f.g:1.0-rc_1  ", Reference("my-team_x/e__f.g", "1.0-rc_1")),
])
def test_it_reads_a_reference_in_the_site_s_registry(text, expected):
    assert reference_parse(text, registry=REGISTRY) == expected


@pytest.mark.parametrize(("text", "says"), [
    ("docker.io/library/python:3.11", "names the registry docker.io; this platform only takes images from its own "
                                      "registry, 127.0.0.1:5000"),
    ("localhost/bm25:v1", "names the registry localhost"),
    ("team.x/bm25:v1", "names the registry team.x"),  # a first part with a dot is a host (docker's rule)
    ("127.0.0.1:5001/bm25:v1", "names the registry 127.0.0.1:5001"),
    ("BM25:v1", "does not name an image: write NAME:TAG"),
    ("bm25:-v1", "has the tag '-v1'"),
    ("bm25@sha256:abc", "has the digest 'sha256:abc'"),
    ("", "Give the image's reference in 127.0.0.1:5000"),
    ("bm25/../etc:v1", "does not name an image"),
    ("bm25:v1?x=1", "has the tag 'v1?x=1'"),
])
def test_it_refuses_what_is_not_a_reference_in_the_site_s_registry(text, says):
    with pytest.raises(RegistryError) as refused:
        reference_parse(text, registry=REGISTRY)
    assert says in refused.value.message
