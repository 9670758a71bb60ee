"""Snapshots: immutable, what the board showed and nothing more (hidden splits), permanent pages, exports, BibTeX,
the diff with the living board, taken by curators."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.models import ProtectedError
from django.urls import reverse
from django.utils import timezone

from catalogue.models import Split
from snapshots.models import Snapshot, SnapshotImmutable
from snapshots.services import core_version, snapshot_take
from submissions.models import Submission

pytestmark = pytest.mark.django_db


@pytest.fixture
def hidden_board(hidden_test, alice, bob, make_entry):
    """The hidden tiny split's board (4 judged topics: a 50-point grid), as tests/pages/test_hidden_board.py."""
    early = make_entry(hidden_test, alice, "early", {"R@10": 0.55, "MAP@10": 0.3123, "MRR@10": 0.5, "nDCG@10": 0.6})
    late = make_entry(hidden_test, bob, "late", {"R@10": 0.70, "MAP@10": 0.4567, "MRR@10": 0.7, "nDCG@10": 0.8})
    make_entry(hidden_test, bob, "low", {"R@10": 0.2, "MAP@10": 0.1})
    make_entry(hidden_test, alice, "mine only", {"R@10": 0.9, "MAP@10": 0.9}, visibility="private")
    Submission.objects.filter(pk=early.pk).update(sha256="a" * 64)
    return early, late


# --- immutable ---------------------------------------------------------------------------------------------


def test_no_code_path_changes_or_deletes_a_snapshot(hidden_board, hidden_test, staff, client):
    snapshot = snapshot_take(split=hidden_test, note="for the paper")
    stored = Snapshot.objects.values().get(pk=snapshot.pk)

    snapshot.note = "edited"
    with pytest.raises(SnapshotImmutable):
        snapshot.save()
    with pytest.raises(SnapshotImmutable):
        snapshot.save(update_fields=["note"])
    with pytest.raises(SnapshotImmutable):
        snapshot.delete()
    with pytest.raises(SnapshotImmutable):
        Snapshot.objects.filter(pk=snapshot.pk).update(note="edited")
    with pytest.raises(SnapshotImmutable):
        Snapshot.objects.all().delete()
    with pytest.raises(SnapshotImmutable):
        Snapshot.objects.bulk_update([snapshot], ["note"])
    with pytest.raises(SnapshotImmutable):
        Snapshot.objects.update_or_create(pk=snapshot.pk, defaults={"note": "edited"})
    # Below the ORM: the database refuses an UPDATE (migration 0002's trigger).
    with pytest.raises(Exception, match="cannot be changed"), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("UPDATE snapshots_snapshot SET note = 'edited' WHERE id = %s", [snapshot.pk])
    # The board it cites cannot go away under it.
    with pytest.raises(ProtectedError), transaction.atomic():
        Split.objects.get(pk=hidden_test.pk).delete()
    # The admin shows it read-only and offers no deletion.
    client.force_login(staff)
    change = reverse("admin:snapshots_snapshot_change", args=[snapshot.pk])
    page = client.get(change).content.decode()
    assert client.get(change).status_code == 200 and 'name="_save"' not in page
    assert client.post(change, {"note": "edited"}).status_code == 403
    assert client.post(reverse("admin:snapshots_snapshot_delete", args=[snapshot.pk]), {"post": "yes"}
                       ).status_code == 403
    assert client.get(reverse("admin:snapshots_snapshot_add")).status_code == 403

    assert Snapshot.objects.values().get(pk=snapshot.pk) == stored
    assert Snapshot.objects.get(pk=snapshot.pk).intact


def test_two_snapshots_of_a_board_on_one_day_get_two_permanent_keys(split_test, alice, make_entry):
    make_entry(split_test, alice, "BM25", {"R@10": 0.5})
    first = snapshot_take(split=split_test)
    second = snapshot_take(split=split_test)
    day = timezone.now().date().isoformat()
    assert first.key == f"tiny-test-{day}" and second.key == f"tiny-test-{day}-2"
    assert first.title == f"Lexboard, Tiny test board, snapshot {day}"
    assert second.title == f"Lexboard, Tiny test board, snapshot {day} (2)"
    with pytest.raises(IntegrityError), transaction.atomic():
        Snapshot(**{f.name: getattr(first, f.name) for f in Snapshot._meta.fields if f.name != "id"}).save()


def test_a_split_without_judgments_has_no_board_to_snapshot(tiny_dataset):
    split = Split.objects.create(dataset=tiny_dataset, name="later", kind="test")
    with pytest.raises(ValueError, match="no published judgments"):
        snapshot_take(split=split)


# --- a hidden split: nothing the board did not show ---------------------------------------------------------


_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.])")


def _numbers(text: str) -> set[str]:
    return set(_NUMBER.findall(text))


def test_a_snapshot_of_a_hidden_split_holds_no_digit_the_board_did_not_show(hidden_board, hidden_test, client):
    board_json = json.loads(client.get(reverse("leaderboard:export", args=["tiny", "json"])).content)
    board_csv = client.get(reverse("leaderboard:export", args=["tiny", "csv"])).content.decode()
    board_page = client.get(reverse("leaderboard:dataset", args=["tiny"])).content.decode()
    snapshot = snapshot_take(split=hidden_test)

    # Row by row, the stored fields are the board's JSON export's (the private entry is on neither).
    assert [r["system"] for r in snapshot.rows] == [e["system"] for e in board_json["entries"]]
    for row, entry in zip(snapshot.rows, board_json["entries"], strict=True):
        for name, value in row.items():
            if name not in ("cells", "run_sha256", "after_task"):
                assert value == entry[name], name
    # Scores: the released primary value on the grid; every other measure absent, as on the board.
    assert [r["scores"] for r in snapshot.rows] == [e["scores"] for e in board_json["entries"]]
    assert [r["cells"]["R@10"] for r in snapshot.rows] == [r["R@10"] for r in csv.DictReader(io.StringIO(board_csv))]
    assert all(r["cells"]["MAP@10"] == "" for r in snapshot.rows)
    assert snapshot.grid == board_json["grid"] == 0.5 and snapshot.grid_note == "±25 points: hidden split"
    assert snapshot.qrels_sha256 == ""  # the board does not show the hidden judgments' checksum

    # Every surface of the snapshot: each score it states is a score the board's page or exports stated.
    surfaces = {
        "json": client.get(reverse("snapshots:export", args=[snapshot.key, "json"])).content.decode(),
        "csv": client.get(reverse("snapshots:export", args=[snapshot.key, "csv"])).content.decode(),
        "tex": client.get(reverse("snapshots:export", args=[snapshot.key, "tex"])).content.decode(),
        "page": client.get(snapshot.get_absolute_url()).content.decode(),
        "diff": client.get(reverse("snapshots:diff", args=[snapshot.key])).content.decode(),
    }
    board_scores = {str(v) for e in board_json["entries"] for v in e["scores"].values() if v is not None}
    board_scores |= {c for r in csv.DictReader(io.StringIO(board_csv)) for c in (r["R@10"], r["MAP@10"]) if c}
    data = json.loads(surfaces["json"])
    assert {str(v) for r in data["rows"] for v in r["scores"].values() if v is not None} <= board_scores
    assert {c for r in data["rows"] for c in r["cells"].values() if c} <= board_scores
    csv_rows = list(csv.DictReader(io.StringIO(surfaces["csv"])))
    assert {r[m] for r in csv_rows for m in ("R@10", "MAP@10", "MRR@10", "nDCG@10") if r[m]} <= board_scores
    table = surfaces["page"].split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    cells = set(re.findall(r'<td class="num">([^<]*)</td>', table)) - {"–"}
    assert cells <= board_scores and cells
    # No full-precision value of any entry, in any form, anywhere (the private entry's neither).
    # (Whole numbers such as 55 are left out: a row id or a date may hold them; the table's cells are checked above.)
    hidden = {"55.00", "70.00", "31.23", "45.67", "50.00", "60.00", "80.00", "0.55", "0.7", "0.3123", "0.4567",
              "0.6", "0.8", "90.00", "0.9", "mine only"}
    for name, text in surfaces.items():
        found = (_numbers(text) | ({"mine only"} if "mine only" in text else set())) & hidden
        assert not found, (name, found)
    assert "per_query" not in surfaces["json"] and "p_value" not in surfaces["json"]
    assert ">50<" in board_page  # the page showed the grid's values the snapshot holds
    # Each export names its unit, and the caption is true of its columns (#38): the entries' one measure, the grid.
    assert {r["unit"] for r in csv_rows} == {"percent points"} and data["scores_are"] == board_json["scores_are"]
    caption = re.search(r"\\caption\{(.*)\}\n", surfaces["tex"]).group(1)
    head = next(line for line in surfaces["tex"].splitlines() if line.startswith("System &"))
    assert head == "System & R@10 \\\\" and "in percent" in caption
    assert "show R@10 only, the primary measure; ±25 points: hidden split." in caption


def test_across_new_judgments_a_hidden_splits_diff_sets_no_entrys_values_then_beside_now(hidden_board, hidden_test,
                                                                                            client):
    """#24, qrels versions: the snapshot taken before new judgments against the board after them showed each entry
    "then → now" (and its rank move), the pair the submission page and the qrels history withhold on a hidden split
    (the budget's ``version_deltas``): what the new judgments changed for that run, e.g. that it does not hold a
    newly judged relevant document. Entries added and gone are still named; a public split keeps the pairs."""
    from catalogue.services import qrels_version_add
    from submissions.models import Result

    early, late = hidden_board
    snapshot = snapshot_take(split=hidden_test)  # as before a publication (snapshots.receivers)
    # One judgment more on q2 (d8 relevant); the entries rescored: "early" drops from 50 to 0 on the 50-point grid.
    qrels = {"q1": {"d1": 2, "d2": 1}, "q2": {"d3": 1, "d8": 1}, "q3": {"d4": 1, "d5": 1, "d6": 1}, "q4": {"d7": 0}}
    v2, _ = qrels_version_add(split=hidden_test, qrels=qrels, note="one more")
    Split.objects.filter(pk=hidden_test.pk).update(current_qrels=v2)
    for sub, r10 in ((early, 0.2), (late, 0.7), (Submission.objects.get(system_name="low"), 0.2)):
        Result.objects.create(submission=sub, qrels_version=v2, scores={"R@10": r10}, primary_score=r10)
    hidden_test.refresh_from_db()
    hidden_test.bump_cache_version()

    html = client.get(reverse("snapshots:diff", args=[snapshot.key])).content.decode()
    rows = re.findall(r'<tr class="row-\w+ change-(\w+)">(.*?)</tr>', html, re.S)
    assert rows and {change for change, _ in rows} == {"kept"}, rows
    assert not [body for _, body in rows if "→" in body or "↑" in body or "↓" in body], "a value or rank then beside now"
    assert "v1 then, v2 now" in html and "not set beside its values now" in html
    # The same change on a public split shows the pair.
    Split.objects.filter(pk=hidden_test.pk).update(hidden=False)
    hidden_test.bump_cache_version()
    html = client.get(reverse("snapshots:diff", args=[snapshot.key])).content.decode()
    assert "change-rescored" in html and "→" in html


# --- public splits: the table, its exports, its citation ---------------------------------------------------


def test_the_permanent_page_exports_and_bibtex_of_a_public_board(split_test, alice, bob, make_entry, reported,
                                                                  client):
    tiny = split_test.dataset
    tiny.citation = "@inproceedings{tiny2024, title={A Tiny Dataset}}"
    tiny.save()
    bm25 = make_entry(split_test, alice, "BM25 & co", {"R@10": 0.5123, "MAP@10": 0.25}, is_baseline=True)
    Submission.objects.filter(pk=bm25.pk).update(sha256="b" * 64)
    make_entry(split_test, bob, "Dense", {"R@10": 0.75, "MAP@10": 0.4})
    snapshot = snapshot_take(split=split_test, note="Table 2 of our paper")
    day = snapshot.taken_at.date().isoformat()

    page = client.get(snapshot.get_absolute_url())
    assert page.status_code == 200
    html = page.content.decode()
    assert "Tiny · test board" in html and "51.23" in html and "75.00" in html and "Table 2 of our paper" in html
    assert "b" * 64 in html and core_version() in html and f"Qrels version {snapshot.qrels_version}" in html
    assert snapshot.qrels_sha256 and snapshot.qrels_sha256 in html  # public judgments: their checksum

    bib = client.get(reverse("snapshots:export", args=[snapshot.key, "bib"])).content.decode()
    assert f"title        = {{{{Lexboard, Tiny test board, snapshot {day}}}}}" in bib
    assert f"http://testserver/snapshots/{snapshot.key}/" in bib and "@inproceedings{tiny2024" in bib
    data = json.loads(client.get(reverse("snapshots:export", args=[snapshot.key, "json"])).content)
    assert data["digest"] == snapshot.digest and data["core_version"] == core_version()
    assert [r["system"] for r in data["rows"]] == ["Dense", "BM25 (paper) & co_1", "BM25 & co"]
    assert data["rows"][2]["run_sha256"] == "b" * 64 and data["rows"][2]["scores"]["R@10"] == 0.5123
    rows = list(csv.DictReader(io.StringIO(
        client.get(reverse("snapshots:export", args=[snapshot.key, "csv"])).content.decode())))
    assert [(r["system"], r["R@10"], r["MAP@10"]) for r in rows] == [
        ("Dense", "75.00", "40.00"), ("BM25 (paper) & co_1", "55.00", "90.00"), ("BM25 & co", "51.23", "25.00")]
    tex = client.get(reverse("snapshots:export", args=[snapshot.key, "tex"])).content.decode()
    assert "BM25 \\& co (baseline) & 51.23 & 25.00" in tex and "Dense & \\textbf{75.00}" in tex
    assert f"snapshot {snapshot.key}" in tex and snapshot.digest in tex

    # The living board changes; the snapshot does not.
    Submission.objects.filter(system_name="Dense").update(withdrawn_at=timezone.now())
    split_test.bump_cache_version()
    assert client.get(snapshot.get_absolute_url()).content.decode().count("75.00") == html.count("75.00")


def test_the_diff_shows_rescored_added_and_removed_entries_and_rank_changes(split_test, alice, bob, make_entry,
                                                                             client):
    a = make_entry(split_test, alice, "A", {"R@10": 0.5})
    b = make_entry(split_test, bob, "B", {"R@10": 0.4})
    snapshot = snapshot_take(split=split_test)
    # B is rescored above A (its result changed), A is withdrawn, C arrives.
    from submissions.models import Result

    Result.objects.filter(submission=b).update(scores={"R@10": 0.9}, primary_score=0.9)
    Submission.objects.filter(pk=a.pk).update(withdrawn_at=timezone.now())
    make_entry(split_test, alice, "C", {"R@10": 0.6})
    split_test.bump_cache_version()

    html = client.get(reverse("snapshots:diff", args=[snapshot.key])).content.decode()
    rows = re.findall(r'<tr class="row-\w+ change-(\w+)">(.*?)</tr>', html, re.S)
    changes = {re.search(r'<td class="system">([^<]+)', body).group(1).strip(): change for change, body in rows}
    assert changes == {"B": "rescored", "C": "added", "A": "removed"}
    b_row = next(body for change, body in rows if "B" in body and change == "rescored")
    assert "40.00 → <strong>90.00</strong>" in b_row and "↑1" in b_row
    assert "1 entry with other values" in html and "1 added" in html and "1 no longer on the board" in html


def test_curators_take_a_snapshot_from_the_board_and_the_admin_others_cannot(split_test, alice, staff, make_entry,
                                                                             client):
    make_entry(split_test, alice, "BM25", {"R@10": 0.5})
    board = client.get(reverse("leaderboard:dataset", args=["tiny"]), {"split": "test"}).content.decode()
    listing = reverse("snapshots:board", args=["tiny"]) + "?split=test"
    assert f'href="{listing.replace("&", "&amp;")}"' in board
    take = reverse("snapshots:take", args=["tiny"])
    client.force_login(alice)
    assert "Take a snapshot now" not in client.get(listing).content.decode()
    assert client.post(take, {"split": "test"}).status_code == 302 and not Snapshot.objects.exists()  # to log in

    client.force_login(staff)
    assert "Take a snapshot now" in client.get(listing).content.decode()
    response = client.post(take, {"split": "test", "note": "ECIR 2027"})
    snapshot = Snapshot.objects.get()
    assert response.status_code == 302 and response["Location"] == snapshot.get_absolute_url()
    assert snapshot.made_by == "curator" and snapshot.note == "ECIR 2027" and snapshot.reason == "curator"
    admin_take = reverse("admin:snapshots_snapshot_take")
    assert client.post(admin_take, {"split": split_test.pk, "note": ""}).status_code == 302
    assert Snapshot.objects.count() == 2
    assert snapshot.key in client.get(listing).content.decode()


def test_a_snapshot_of_an_unpublished_dataset_is_for_staff_only(split_test, alice, staff, make_entry, client):
    make_entry(split_test, alice, "BM25", {"R@10": 0.5})
    snapshot = snapshot_take(split=split_test)
    split_test.dataset.is_published = False
    split_test.dataset.save()
    assert client.get(snapshot.get_absolute_url()).status_code == 404
    client.force_login(staff)
    assert client.get(snapshot.get_absolute_url()).status_code == 200
