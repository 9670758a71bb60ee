"""libFuzzer (atheris) target for the run and qrels readers: ``python atheris_target.py -runs=20000``.

Coverage-guided, so it finds inputs hypothesis's random bytes rarely reach
(a gzip header with a valid deflate stream, a BOM followed by NUL bytes...).
Any exception other than ``InputError`` is a crash: atheris prints the input
and exits non-zero. ``test_fuzz.py`` runs it bounded; it is not a test module.
"""

from __future__ import annotations

import sys

import atheris

with atheris.instrument_imports():
    from evaluation.errors import InputError
    from evaluation.qrels import read_qrels
    from evaluation.runs import read_run, sniff_run


def one_input(data: bytes) -> None:
    if not data:
        return
    which, body = data[0] % 3, data[1:]
    try:
        if which == 0:
            run = read_run(body)
            assert len(run) == len(run.qcode) == len(run.scores)
        elif which == 1:
            qrels = read_qrels(body)
            assert len(qrels) == sum(len(v) for v in qrels.to_dict().values())
        else:
            for problem in sniff_run(body):
                assert problem.reason
    except InputError as exc:
        assert exc.problems


if __name__ == "__main__":
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()
