"""Runs ``sandbox.runner.run_image`` in a process of its own and prints the outcome as JSON.

The hostile-output tests start it with canary values in its environment (``SECRET_KEY``, ``DATABASE_URL``, ...),
as a sandbox worker holds them, so a link to ``/proc/self/environ`` points at a process that has secrets to leak.
Usage: ``python tests/sandbox/run_in_child.py '<json>'`` with sandbox, image, input, work, limits and name.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from sandbox.runner import Limits, Sandbox, run_image  # noqa: E402


def main(spec: dict) -> dict:
    outcome = run_image(sandbox=Sandbox(**spec["sandbox"]), image=spec["image"], input_dir=Path(spec["input"]),
                        work_dir=Path(spec["work"]), limits=Limits(**spec["limits"]), name=spec["name"])
    run = outcome.run_path.read_bytes()[:1 << 20].decode("utf-8", "replace") if outcome.run_path else ""
    return {"status": outcome.status.value, "message": outcome.message, "stderr_tail": outcome.stderr_tail,
            "run": run, "run_bytes": outcome.run_bytes}


if __name__ == "__main__":
    print(json.dumps(main(json.loads(sys.argv[1]))))
