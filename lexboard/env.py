"""Typed readers for settings that come from the environment.

Each helper fails loudly on a value it cannot read, so a typo in a deployment
stops the process at start-up instead of running with a surprising default.
"""

from __future__ import annotations

import os
import re
from pathlib import Path


class ImproperSetting(Exception):
    """An environment variable holds a value its setting cannot use."""


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str) -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperSetting(f"{name}={raw!r}: expected one of 1/0, true/false, yes/no, on/off")


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ImproperSetting(f"{name}={raw!r}: expected an integer") from None


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_path(name: str, default: Path) -> Path:
    raw = os.environ.get(name)
    return Path(raw).expanduser().resolve() if raw else default


_RATE = re.compile(r"^\d+/\d*[smhd]$")


def env_rate(name: str, default: str) -> str:
    """A rate such as ``10/m``, ``3/h`` or ``5/15m``: COUNT/PERIOD, PERIOD one of s, m, h, d with an optional number."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    value = raw.strip()
    if not _RATE.match(value):
        raise ImproperSetting(f"{name}={raw!r}: expected COUNT/PERIOD, e.g. 10/m, 3/h or 5/15m")
    return value
