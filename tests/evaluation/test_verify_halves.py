"""The double entry over two halves of a run file, the second half in a forked process (``evaluation.verify_halves``).

The split may change how long the check takes, never what it finds: the
values must be those of one reading, whatever the file's shape, and a child
that dies must cost time only.
"""

from __future__ import annotations

import dataclasses
import gzip
import os
import signal
import socket

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from evaluation import evaluate, parse_measures, read_qrels, read_run, verify_halves
from evaluation.reference import per_query, read_plain_qrels, read_plain_run
from evaluation.verify import begin, verify
from evaluation.verify_halves import Helper, LaterHalf, idle_core, split_point, values_in_two

MEASURES = parse_measures("R@1,R@5,MAP@10,MRR@3,nDCG@5,P@5,bpref")


@pytest.fixture(autouse=True)
def an_idle_core(monkeypatch):
    """The split is tried whatever the machine's load while these tests run (``idle_core`` is tested alone)."""
    monkeypatch.setattr(verify_halves, "idle_core", lambda: True)


@pytest.fixture(autouse=True)
def no_helper_kept():
    """Each test starts without this process's helper and leaves none."""
    if (helper := Helper.kept()) is not None:
        helper.end()
    yield
    if (helper := Helper.kept()) is not None:
        helper.end()


def plain_second(qrels: dict, rows: dict) -> dict:
    """The plain implementation as ``second``, with the test's fixed options."""
    return per_query(qrels, rows, MEASURES, depth=1000, threshold=1, score_precision="float64",
                     empty_queries="omit")


def one_process(run: bytes, qrels: dict) -> dict:
    wanted = {q for q, d in qrels.items() if any(g >= 1 for g in d.values())}
    rows = read_plain_run(run)
    return plain_second({q: qrels[q] for q in rows if q in wanted}, {q: rows[q] for q in rows if q in wanted})


def wanted_of(qrels: dict) -> set[str]:
    return {q for q, d in qrels.items() if any(g >= 1 for g in d.values())}


lines_st = st.lists(
    st.tuples(st.sampled_from([f"q{i}" for i in range(8)]), st.sampled_from([f"d{j}" for j in range(12)]),
              st.floats(min_value=-5, max_value=5, allow_nan=False, allow_infinity=False)),
    min_size=0, max_size=60)
noise_st = st.sampled_from(["", "\n", "# a comment\n", "   \n", "#q0 Q0 d1 1 9 t\n"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=lines_st, noise=st.lists(noise_st, min_size=1, max_size=60), grouped=st.booleans(),
       gz=st.booleans(), bom=st.booleans(), crlf=st.booleans())
def test_two_halves_give_exactly_the_values_of_one_reading(lines, noise, grouped, gz, bom, crlf):
    """Grouped or not, comments and blank lines anywhere (at the cut too), gzip, a BOM, CRLF line ends."""
    if grouped:
        lines = sorted(lines, key=lambda row: row[0])
    end = "\r\n" if crlf else "\n"
    text = "".join(f"{q} Q0 {d} {i} {s!r} tag{end}{noise[i % len(noise)]}" for i, (q, d, s) in enumerate(lines))
    run = ("\ufeff" if bom else "").encode() + text.encode()
    qrels = {f"q{i}": {f"d{j}": (i + j) % 3 for j in range(0, 12, 2)} for i in range(7)}  # q7: not judged
    expected = one_process(run, qrels)
    got = values_in_two(gzip.compress(run) if gz else run, qrels, wanted_of(qrels), plain_second)
    if got is None:  # not split: an ungrouped file whose halves share a query, or no place to cut
        assert not grouped or split_point(run.removeprefix(b"\xef\xbb\xbf")) is None
        return
    assert got == expected


def bsard_like_run(queries: int = 40, depth: int = 50) -> tuple[bytes, dict]:
    run = "".join(f"{q} Q0 doc{(q * 7 + r * 13) % 997} {r + 1} {depth - r}.25 sys\n"
                  for q in range(1, queries + 1) for r in range(depth)).encode()
    qrels = {str(q): {f"doc{(q * 7 + r * 13) % 997}": 1 for r in (0, 3, 60)} for q in range(1, queries + 1)}
    return run, qrels


def test_the_later_half_is_computed_in_another_process():
    run, qrels = bsard_like_run()
    pids: set[int] = set()

    def second(judged, rows):
        pids.add(os.getpid())  # the child's add is its own copy's: its pid comes back in the values
        return {q: {**v, "pid": float(os.getpid())} for q, v in plain_second(judged, rows).items()}

    got = values_in_two(run, qrels, set(qrels), second)
    assert got is not None and set(got) == set(qrels)
    assert {v["pid"] for v in got.values()} == {float(os.getpid()), *({v["pid"] for v in got.values()} - pids)}
    assert len({v["pid"] for v in got.values()}) == 2
    assert {q: {m: x for m, x in v.items() if m != "pid"} for q, v in got.items()} == one_process(run, qrels)


@pytest.mark.parametrize("fault", ["raises", "killed"])
def test_a_child_that_dies_costs_time_not_values(fault):
    run, qrels = bsard_like_run()
    parent = os.getpid()

    def second(judged, rows):
        if os.getpid() != parent:
            if fault == "killed":
                os.kill(os.getpid(), signal.SIGKILL)
            raise RuntimeError("the child fails")
        return plain_second(judged, rows)

    assert values_in_two(run, qrels, set(qrels), second) == one_process(run, qrels)


def test_an_ungrouped_file_whose_halves_share_a_query_is_not_split():
    run, qrels = bsard_like_run(queries=10, depth=10)
    lines = run.splitlines(keepends=True)
    assert values_in_two(b"".join(lines[:-1] + [lines[0].replace(b"doc", b"other")] + lines[-1:]), qrels,
                         set(qrels), plain_second) is None


def test_no_split_for_one_query_a_file_over_the_bound_or_a_cut_with_no_query_change():
    run, qrels = bsard_like_run(queries=1, depth=200)
    assert split_point(run) is None and values_in_two(run, qrels, set(qrels), plain_second) is None
    run, qrels = bsard_like_run()
    assert values_in_two(run, qrels, set(qrels), plain_second, max_bytes=len(run) - 1) is None
    assert values_in_two(run, qrels, set(qrels), plain_second, max_bytes=len(run)) is not None


def test_the_cut_is_the_first_line_of_a_query_past_the_middle():
    run = b"".join(f"{q} Q0 d{r} {r} 1.0 t\n".encode() for q in "abcd" for r in range(5))
    cut = split_point(run)  # the middle falls inside c's lines: the cut is d's first
    assert cut >= len(run) // 2 and run[cut - 1:cut] == b"\n" and run[cut:].startswith(b"d Q0 d0 ")
    noise = b"# d's rows follow\n\n"  # a comment and a blank line: passed over
    assert split_point(run[:cut] + noise + run[cut:]) == cut + len(noise)


@pytest.mark.parametrize("method,precision", [("pytrec_eval", "float32"), ("plain", "float64")])
def test_verify_in_two_processes_finds_what_one_finds(tmp_path, method, precision):
    """The same Verification, ok or not: a value put wrong on a query of each half is found."""
    run_text, qrels_dict = bsard_like_run()
    qrels_text = "".join(f"{q} 0 {d} {g}\n" for q, docs in qrels_dict.items() for d, g in docs.items()).encode()
    (tmp_path / "run").write_bytes(run_text)
    qrels, run = read_qrels(qrels_text), read_run(run_text)
    ev = evaluate(qrels, run, MEASURES, score_precision=precision)
    one = verify(read_plain_qrels(qrels_text), str(tmp_path / "run"), ev, score_precision=precision, method=method)
    two = verify(read_plain_qrels(qrels_text), str(tmp_path / "run"), ev, score_precision=precision, method=method,
                 processes=2)
    assert one == two and two.ok
    for i in (2, len(ev.qids) - 3):  # one query in each half
        tampered = {name: values.copy() for name, values in ev.per_query.items()}
        tampered["MAP@10"][i] += 1e-6
        bad = dataclasses.replace(ev, per_query=tampered)
        got = verify(read_plain_qrels(qrels_text), str(tmp_path / "run"), bad, score_precision=precision,
                     method=method, processes=2)
        assert got.disagreement is not None and got.disagreement.qid == ev.qids[i]
        assert got == verify(read_plain_qrels(qrels_text), str(tmp_path / "run"), bad, score_precision=precision,
                             method=method)


def test_a_check_begun_before_the_first_entry_gives_what_verify_gives_and_reaps_its_child_on_an_error(tmp_path):
    """The worker's way (``begin`` before the first entry, ``finish`` after): the same Verification; an error in
    between (the first entry refusing the run) leaves no child behind."""
    run_text, qrels_dict = bsard_like_run()
    (tmp_path / "run").write_bytes(run_text)
    qrels_text = "".join(f"{q} 0 {d} {g}\n" for q, docs in qrels_dict.items() for d, g in docs.items()).encode()
    plain = read_plain_qrels(qrels_text)
    with begin(plain, str(tmp_path / "run"), MEASURES, processes=2, share=0.45) as check:
        assert check.later is not None  # the later half is being read in a child already
        ev = evaluate(read_qrels(qrels_text), read_run(run_text), MEASURES)
        got = check.finish(ev)
    assert got == verify(plain, str(tmp_path / "run"), ev) and got.ok
    with pytest.raises(ValueError, match="measures"), begin(plain, str(tmp_path / "run"), MEASURES[:2],
                                                             processes=2) as check:
        check.finish(ev)
    children = []
    with pytest.raises(RuntimeError), begin(plain, str(tmp_path / "run"), MEASURES, processes=2) as check:
        assert check.later is not None
        children.append(check.later._pid)
        raise RuntimeError("the first entry refuses the run")
    with pytest.raises(ChildProcessError):
        os.waitpid(children[0], os.WNOHANG)  # reaped (other tests of this process may have children of their own)


@pytest.mark.parametrize("load,idle", [(0.4, True), (1.5, True), (1.6, False), (3.0, False), (None, True)])
def test_a_child_is_forked_only_while_a_core_is_idle(monkeypatch, tmp_path, load, idle):
    """Where the kernel tells no CPU pressure: on two usable cores, a minute's load of at most 1.5 leaves a core for
    the child; a load that cannot be read does not stop the split."""

    def getloadavg():
        if load is None:
            raise OSError("no load average here")
        return (load, load, load)

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.setattr(os, "getloadavg", getloadavg)
    monkeypatch.setattr(verify_halves, "PRESSURE_FILES", (str(tmp_path / "none"),))
    assert idle_core((str(tmp_path / "none"),)) is idle
    run, qrels = bsard_like_run()
    monkeypatch.setattr(verify_halves, "idle_core", lambda: idle)
    later = LaterHalf.start(run, qrels, set(qrels), plain_second)
    assert (later is not None) is idle
    if later is not None:
        later.close()


@pytest.mark.parametrize("avg10,idle", [("0.00", True), ("17.40", True), ("40.00", True), ("40.01", False),
                                         ("99.10", False)])
def test_where_the_kernel_tells_cpu_pressure_it_decides_not_the_load(monkeypatch, tmp_path, avg10, idle):
    """The cgroup's pressure file is read first (a container's own), the machine's next; the load average, here
    one that would refuse, is not asked."""
    cgroup, machine = tmp_path / "cpu.pressure", tmp_path / "cpu"
    cgroup.write_text(f"some avg10={avg10} avg60=1.00 avg300=1.00 total=1\nfull avg10=0.00 avg60=0.00 avg300=0.00 "
                      "total=0\n")
    machine.write_text("some avg10=99.00 avg60=99.00 avg300=99.00 total=1\n")
    monkeypatch.setattr(os, "getloadavg", lambda: (9.0, 9.0, 9.0))
    assert idle_core((str(cgroup), str(machine))) is idle
    assert idle_core((str(tmp_path / "absent"), str(machine))) is False  # the next file when the first is absent


@pytest.mark.parametrize("text", ["", "some\n", "some avg10=x avg60=1\n", "full avg10=1.00\n", "garbage"])
def test_a_pressure_file_that_says_nothing_readable_falls_back_to_the_load(monkeypatch, tmp_path, text):
    bad = tmp_path / "cpu.pressure"
    bad.write_text(text)
    assert verify_halves.cpu_pressure((str(bad),)) is None
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.setattr(os, "getloadavg", lambda: (3.0, 3.0, 3.0))
    assert idle_core((str(bad),)) is False


# ---------------------------------------------------------------- the kept helper


def pid_second(qrels: dict, rows: dict) -> dict:
    """``plain_second`` that says which process computed each query (a module's function: it can be sent)."""
    return {q: {**v, "pid": float(os.getpid())} for q, v in plain_second(qrels, rows).items()}


def failing_in_the_helper(qrels: dict, rows: dict) -> dict:
    if os.getpid() != PARENT[0]:
        raise RuntimeError("the helper fails")
    return plain_second(qrels, rows)


PARENT = [os.getpid()]


def without_pids(values: dict) -> dict:
    return {q: {m: x for m, x in v.items() if m != "pid"} for q, v in values.items()}


def helper_pids(values: dict) -> set[float]:
    return {v["pid"] for v in values.values()} - {float(os.getpid())}


def test_the_helper_is_forked_once_and_kept_from_one_run_to_the_next():
    """A second that can be sent goes to this process's helper: the same process computes the later half of the
    next run too (no fork, no pages copied on write a run), with exactly one reading's values."""
    run, qrels = bsard_like_run()
    first = values_in_two(run, qrels, set(qrels), pid_second)
    other_run, other_qrels = bsard_like_run(queries=30, depth=20)
    second = values_in_two(other_run, other_qrels, set(other_qrels), pid_second)  # new judgments: sent anew
    assert first is not None and second is not None
    assert len(helper_pids(first)) == 1 and helper_pids(first) == helper_pids(second)
    assert without_pids(first) == one_process(run, qrels)
    assert without_pids(second) == one_process(other_run, other_qrels)
    helper = Helper.kept()
    assert helper is not None
    assert float(helper.pid) in helper_pids(first) and os.waitpid(helper.pid, os.WNOHANG) == (0, 0)  # alive


@pytest.mark.parametrize("how", ["killed", "grown"])
def test_a_helper_gone_between_two_runs_is_forked_again(monkeypatch, how):
    run, qrels = bsard_like_run()
    if how == "grown":  # leaves after its first answer
        monkeypatch.setattr(verify_halves, "HELPER_MAX_RSS_KIB", 1)
    first = values_in_two(run, qrels, set(qrels), pid_second)
    if how == "killed":  # between two runs (reaped here: gone before the next run, as seconds later)
        helper = Helper.kept()
        assert helper is not None
        pid = helper.pid
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    second = values_in_two(run, qrels, set(qrels), pid_second)
    assert first is not None and second is not None
    assert helper_pids(first) != helper_pids(second) and len(helper_pids(second)) == 1
    assert without_pids(first) == without_pids(second) == one_process(run, qrels)


def test_a_half_not_joined_ends_the_helper_and_a_failing_helper_costs_time_not_values():
    run, qrels = bsard_like_run()
    later = LaterHalf.start(run, qrels, set(qrels), pid_second)
    assert later is not None and later._helper is not None
    pid = later._helper.pid
    later.close()  # the first entry refused the run: its answer must not wait in the pipe for the next run
    assert Helper.kept() is None
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # killed and reaped
    PARENT[0] = os.getpid()
    assert values_in_two(run, qrels, set(qrels), failing_in_the_helper) == one_process(run, qrels)
    assert Helper.kept() is None  # a helper that answered nothing is ended


def test_the_worker_s_double_entry_is_sent_to_the_helper(tmp_path):
    """``verify.begin``'s second implementation is a value (``SecondImplementation``), so the worker's later
    halves go to its kept helper; the Verification is ``verify``'s."""
    run_text, qrels_dict = bsard_like_run()
    (tmp_path / "run").write_bytes(run_text)
    qrels_text = "".join(f"{q} 0 {d} {g}\n" for q, docs in qrels_dict.items() for d, g in docs.items()).encode()
    plain = read_plain_qrels(qrels_text)
    ev = evaluate(read_qrels(qrels_text), read_run(run_text), MEASURES)
    pids = []
    for _ in range(2):
        with begin(plain, str(tmp_path / "run"), MEASURES, processes=2, share=0.45) as check:
            assert check.later is not None and check.later._helper is not None
            pids.append(check.later._helper.pid)
            got = check.finish(ev)
        assert got == verify(plain, str(tmp_path / "run"), ev) and got.ok
    assert pids[0] == pids[1]


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="the descriptors are read from /proc")
def test_the_helper_keeps_none_of_the_parents_connections():
    """Every descriptor the helper inherited is closed but its standard streams and its two pipes: a socket the
    worker closes (its broker or database connection) is not held open by the helper, where the broker would go
    on sending to it."""
    a, b = socket.socketpair()
    try:
        run, qrels = bsard_like_run()
        assert values_in_two(run, qrels, set(qrels), pid_second) is not None
        helper = Helper.kept()
        assert helper is not None
        fds = sorted(int(fd) for fd in os.listdir(f"/proc/{helper.pid}/fd"))
        targets = [os.readlink(f"/proc/{helper.pid}/fd/{fd}") for fd in fds if fd > 2]
        assert len(targets) == 2 and all(t.startswith("pipe:") for t in targets), targets
        assert not any(t.startswith("socket:") for t in targets)
    finally:
        a.close()
        b.close()
