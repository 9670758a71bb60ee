"""Importers on good and broken files: what they store, what they refuse, and re-imports."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from catalogue.importers import (
    IMPORTERS,
    ClassificationData,
    ImportRefused,
    Release,
    files_from_directory,
    files_from_zip,
    import_beir,
    import_bsard,
    import_trec,
    parse_beir,
    parse_bsard,
)
from catalogue.models import Benchmark, Corpus, Dataset, QrelsVersion, Split, Topic
from submissions.services import release_import

DATA = Path(__file__).resolve().parent.parent / "data" / "import"


def read(*parts: str) -> tuple[str, bytes]:
    path = DATA.joinpath(*parts)
    return path.name, path.read_bytes()


@pytest.fixture
def dataset(db):
    bench = Benchmark.objects.create(slug="statutes", name="Statutes")
    return Dataset.objects.create(
        benchmark=bench, slug="bsard", name="BSARD", language="fr", measures=["R@100"], primary_measure="R@100"
    )


def counts(dataset) -> tuple[int, int, int, int]:
    return (
        Split.objects.filter(dataset=dataset).count(),
        Topic.objects.filter(split__dataset=dataset).count(),
        QrelsVersion.objects.filter(split__dataset=dataset).count(),
        Corpus.objects.filter(dataset=dataset).count(),
    )


# --- the registry ---------------------------------------------------------------


#: A release of each registered format, as the command line and the admin's form hand it to the registry.
RELEASES = {
    "bsard": Release(files=IMPORTERS["bsard"].folder_files(DATA / "bsard")),
    "beir": Release(files=IMPORTERS["beir"].folder_files(DATA / "beir"), hidden_splits=("test",)),
    "trec": Release(split="dev", topics=read("trec", "topics.tsv"), qrels=read("trec", "test.qrels"),
                    corpus_ids=read("trec", "ids.txt")),
    "classification": Release(split="test", hidden=True, task="single", file=("test.jsonl", (
        b'{"id": "a1", "text": "Le bail est r\xc3\xa9sili\xc3\xa9.", "label": "civil", "language": "fr"}\n'
        b'{"id": "a2", "text": "Der Dieb wird bestraft.", "label": "criminal", "language": "de"}\n'))),
}


@pytest.mark.parametrize("name", list(IMPORTERS))
def test_each_registered_format_parses_its_release_under_its_own_name(name):
    """The registry's name is the one the parsed release carries (the report's, ``release_store``'s): a format
    registered under another name, or without a release here, fails."""
    assert name in RELEASES, f"add a release of the {name} format to RELEASES"
    data = IMPORTERS[name].parse(RELEASES[name])
    assert data.format == name
    # release_store stores a classification release as gold labels: a format for such datasets says so.
    assert IMPORTERS[name].predictions == isinstance(data, ClassificationData)


def test_every_release_here_is_of_a_registered_format():
    assert set(RELEASES) == set(IMPORTERS)


# --- BSARD ------------------------------------------------------------------------


def test_it_imports_a_bsard_release(dataset):
    report = import_bsard(dataset=dataset, files=files_from_directory(DATA / "bsard"))

    assert report.corpus_documents == 20 and report.corpus_status == "new"
    assert sorted(dataset.corpus.ids(), key=int) == [str(i) for i in range(1, 21)]
    train, test = Split.objects.get(dataset=dataset, name="train"), Split.objects.get(dataset=dataset, name="test")
    assert (train.hidden, train.kind, test.hidden, test.kind) == (False, "train", True, "test")
    assert train.topics.count() == 8 and test.topics.count() == 6
    q3 = train.topics.get(qid="3")
    assert (q3.category, q3.subcategory) == ("Travail", "Licenciement")
    assert train.topics.get(qid="2").extra == {"extra_description": "Je suis locataire."}
    qrels = train.current_qrels
    assert qrels.version == 1 and qrels.n_topics == 8 and qrels.n_judgments == 18
    assert "3 0 13 1\n" in qrels.text() and "3 0 5 1\n" in qrels.text()
    assert test.current_qrels.n_judgments == 6
    lines = "\n".join(report.lines())
    assert "split train (public, new): 8 topics (8 new, 0 updated)" in lines
    assert "qrels v1 added and published" in lines


def test_it_reports_unchanged_on_a_second_bsard_import(dataset):
    import_bsard(dataset=dataset, files=files_from_directory(DATA / "bsard"))
    before = counts(dataset)

    report = import_bsard(dataset=dataset, files=files_from_directory(DATA / "bsard"))

    assert not report.changed
    assert counts(dataset) == before
    assert report.corpus_status == "unchanged"
    assert report.lines()[-1].startswith("unchanged")


def test_it_refuses_a_broken_bsard_release_with_line_numbers(dataset):
    with pytest.raises(ImportRefused) as exc:
        import_bsard(dataset=dataset, files=files_from_directory(DATA / "bsard_broken"))

    lines = exc.value.lines
    assert 'articles_fr.csv:23: id "abc" is not an integer — BSARD article ids are numbers, e.g. 1234' in lines
    # Article 3 spans two lines, so article 5 starts on line 7.
    assert "articles_fr.csv:24: article id 5 is already on line 7 — ids must be unique" in lines
    assert (
        'questions_fr_test.csv:4: article_ids "12a" is not a list of integers — '
        'write ids separated by commas, e.g. "12,845"'
    ) in lines
    assert counts(dataset) == (0, 0, 0, 0)


def test_it_refuses_bsard_questions_naming_unknown_articles_without_revealing_hidden_ids(dataset, tmp_path):
    shutil.copytree(DATA / "bsard", tmp_path / "b")
    test_csv = tmp_path / "b" / "questions_fr_test.csv"
    test_csv.write_bytes(test_csv.read_bytes().replace(b",11\r\n", b',"11,987"\r\n'))
    train_csv = tmp_path / "b" / "questions_fr_train.csv"
    train_csv.write_text(train_csv.read_text().replace('"1,2"', '"1,2,999"'))

    with pytest.raises(ImportRefused) as exc:
        import_bsard(dataset=dataset, files=files_from_directory(tmp_path / "b"))

    text = str(exc.value)
    assert "questions_fr_train.csv:2: article_ids names article id(s) 999 not in articles_fr.csv" in text
    assert "questions_fr_test.csv:2: article_ids names 1 article id(s) not in articles_fr.csv" in text
    assert "987" not in text
    assert counts(dataset) == (0, 0, 0, 0)


def test_it_refuses_a_bsard_folder_without_articles(dataset):
    files = files_from_directory(DATA / "bsard")
    del files["articles_fr.csv"]
    with pytest.raises(ImportRefused, match="articles_fr.csv: is missing"):
        parse_bsard(files)


def test_it_refuses_a_csv_with_a_wrong_header(dataset):
    files = {"articles_fr.csv": b"ident,text\n1,x\n", "questions_fr_test.csv": b"id,question,article_ids\n1,q?,1\n"}
    with pytest.raises(ImportRefused) as exc:
        parse_bsard(files)
    assert "articles_fr.csv:1: the header lacks the column(s) id, article" in str(exc.value)


def test_it_refuses_text_that_is_not_utf8(dataset):
    files = files_from_directory(DATA / "bsard")
    files["questions_fr_train.csv"] = files["questions_fr_train.csv"].replace("é".encode(), b"\xe9", 1)
    with pytest.raises(ImportRefused, match=r"questions_fr_train.csv:2: byte 0xe9 is not UTF-8"):
        parse_bsard(files)


def test_it_adds_a_qrels_version_when_judgments_change_and_publishes_only_when_asked(dataset, tmp_path):
    import_bsard(dataset=dataset, files=files_from_directory(DATA / "bsard"))
    test = Split.objects.get(dataset=dataset, name="test")
    v1 = test.current_qrels
    shutil.copytree(DATA / "bsard", tmp_path / "b")
    path = tmp_path / "b" / "questions_fr_test.csv"
    path.write_bytes(path.read_bytes().replace(b",11\r\n", b',"11,12"\r\n'))

    report = import_bsard(dataset=dataset, files=files_from_directory(tmp_path / "b"), note="fix q101")

    test.refresh_from_db()
    assert test.current_qrels == v1  # not published automatically
    v2 = QrelsVersion.objects.get(split=test, version=2)
    assert v2.note == "fix q101" and v2.n_judgments == 7
    line = next(x for x in report.lines() if x.startswith("split test"))
    assert "qrels v2 added, NOT published (v1 stays current" in line
    assert next(s for s in report.splits if s.name == "train").qrels_created is False

    # One judgment added on a hidden split: published as a small change, with its reason (tests/security/
    # test_qrels_batch_leak.py refuses it without one).
    report = release_import(dataset=dataset, data=parse_bsard(files_from_directory(tmp_path / "b")), publish=True,
                            small_change_reason="q101 lacked an article")
    test.refresh_from_db()
    assert test.current_qrels == v2
    assert QrelsVersion.objects.filter(split=test).count() == 2
    assert "qrels unchanged (v2), now published" in "\n".join(report.lines())


def test_a_dry_run_reports_but_writes_nothing(dataset):
    report = import_bsard(dataset=dataset, files=files_from_directory(DATA / "bsard"), dry_run=True)
    assert report.dry_run and report.changed
    assert counts(dataset) == (0, 0, 0, 0)


def test_it_updates_changed_topics_and_keeps_topics_missing_from_the_files(dataset, tmp_path):
    import_bsard(dataset=dataset, files=files_from_directory(DATA / "bsard"))
    shutil.copytree(DATA / "bsard", tmp_path / "b")
    path = tmp_path / "b" / "questions_fr_train.csv"
    lines = path.read_text().splitlines(keepends=True)
    lines[1] = lines[1].replace("Logement,Bail", "Logement,Loyer")
    del lines[-1]  # question 8
    path.write_text("".join(lines))

    report = import_bsard(dataset=dataset, files=files_from_directory(tmp_path / "b"))

    train = next(s for s in report.splits if s.name == "train")
    assert (train.topics_created, train.topics_updated, train.topics_kept) == (0, 1, 1)
    assert Topic.objects.get(split__name="train", split__dataset=dataset, qid="1").subcategory == "Loyer"
    assert Topic.objects.filter(split__name="train", split__dataset=dataset).count() == 8
    assert any("1 topic already in the split is not in these files" in w for w in report.warnings)


# --- BEIR -------------------------------------------------------------------------


def test_it_imports_a_beir_folder(dataset):
    report = import_beir(dataset=dataset, files=files_from_directory(DATA / "beir"))

    assert dataset.corpus.n_documents == 20 and "CivC::4" in dataset.corpus.ids()
    dev, test = Split.objects.get(dataset=dataset, name="dev"), Split.objects.get(dataset=dataset, name="test")
    assert (dev.hidden, dev.kind, test.hidden, test.kind) == (False, "dev", True, "test")
    assert dev.topics.count() == 4 and test.topics.count() == 6
    q1 = dev.topics.get(qid="q1")
    assert q1.category == "criminal" and q1.extra == {"exam": "2023"}
    assert test.topics.get(qid="q10").category == ""
    assert dev.current_qrels.n_judgments == 5 and test.current_qrels.n_relevant == 6
    warnings = report.warnings
    # q10 is judged 0 only; CivC::9 (dev) is not in the corpus.
    assert ("split test: 1 judged query has no relevant document (grade ≥ 1); it is left out of every average "
            "(the dataset's empty-query convention is omit; choose count to count them as 0)") in warnings
    assert "split dev: 1 judgment names a document that is not in the corpus" in warnings
    assert not any("q10" in w for w in warnings)  # the hidden split gets counts only


def test_the_empty_query_warning_follows_the_dataset_convention(dataset):
    dataset.empty_queries = Dataset.EmptyQueries.COUNT
    dataset.save()

    report = import_beir(dataset=dataset, files=files_from_directory(DATA / "beir"))

    assert ("split test: 1 judged query has no relevant document (grade ≥ 1); it counts as 0 in every average "
            "(the dataset's empty-query convention is count, as trec_eval -c)") in report.warnings

    again = import_beir(dataset=dataset, files=files_from_directory(DATA / "beir"))
    assert not again.changed


def test_it_hides_the_splits_it_is_told_to(dataset):
    import_beir(dataset=dataset, files=files_from_directory(DATA / "beir"), hidden=["dev", "test"])
    assert set(Split.objects.filter(dataset=dataset, hidden=True).values_list("name", flat=True)) == {"dev", "test"}


def test_it_names_public_queries_without_relevant_documents(dataset):
    report = import_beir(dataset=dataset, files=files_from_directory(DATA / "beir"), hidden=[])
    assert any("(e.g. q10)" in w for w in report.warnings)


def test_it_refuses_a_broken_beir_folder_with_line_numbers(dataset):
    with pytest.raises(ImportRefused) as exc:
        import_beir(dataset=dataset, files=files_from_directory(DATA / "beir_broken"))

    lines = exc.value.lines
    assert any(x.startswith("corpus.jsonl:3: not valid JSON") for x in lines)
    assert "corpus.jsonl:6: document \"_id\" PenC::5 is already on line 5 — ids must be unique" in lines
    assert 'queries.jsonl:2: has no "text" — every query needs its question text' in lines
    assert 'qrels/test.tsv:3: score "x" is not an integer — write a relevance grade such as 0, 1 or 2' in lines
    assert counts(dataset) == (0, 0, 0, 0)


def test_it_refuses_beir_qrels_naming_unknown_queries(dataset):
    files = files_from_directory(DATA / "beir")
    files["qrels/test.tsv"] += b"q99\tPenC::5\t1\n"
    with pytest.raises(ImportRefused) as exc:
        parse_beir(files)
    assert str(exc.value) == "qrels/test.tsv:8: query-id q99 is not in queries.jsonl"


def test_it_reads_a_zipped_beir_folder_with_a_top_folder(dataset):
    import io
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in files_from_directory(DATA / "beir").items():
            z.writestr(f"greekbar/{name}", data)
    files = files_from_zip(buf.getvalue(), max_bytes=10**6)
    assert set(files) == {"corpus.jsonl", "queries.jsonl", "qrels/dev.tsv", "qrels/test.tsv"}
    with pytest.raises(ImportRefused, match="more than the limit"):
        files_from_zip(buf.getvalue(), max_bytes=100)


# --- TREC -------------------------------------------------------------------------


def trec(dataset, topics="topics.tsv", qrels="test.qrels", **kw):
    return import_trec(
        dataset=dataset,
        split="test",
        topics=read("trec", topics),
        qrels=read("trec", qrels),
        corpus_ids=read("trec", "ids.txt"),
        **kw,
    )


def test_it_imports_trec_topics_and_qrels(dataset):
    report = trec(dataset, hidden=True)

    test = Split.objects.get(dataset=dataset, name="test")
    assert test.hidden and test.topics.count() == 6
    assert test.topics.get(qid="1").category == "work"
    assert test.current_qrels.n_judgments == 10 and test.current_qrels.n_relevant == 6
    assert dataset.corpus.n_documents == 20
    assert "split test: 1 topic has no judgment; it is not evaluated" in report.warnings


def test_it_reads_trec_sgml_topics(dataset):
    trec(dataset, topics="topics.sgml")
    topic = Topic.objects.get(split__dataset=dataset, qid="3")
    assert topic.text == "Case 3 question"
    assert topic.extra == {
        "description": "What does the law say about case 3?",
        "narrative": "A relevant article settles case 3.",
    }


def test_it_refuses_broken_trec_files_with_line_numbers(dataset):
    with pytest.raises(ImportRefused) as exc:
        import_trec(
            dataset=dataset, split="test", topics=read("trec_broken", "topics.tsv"), qrels=read("trec_broken", "test.qrels")
        )
    lines = exc.value.lines
    assert "topics.tsv:3: has no tab — write qid<TAB>question text[<TAB>category]" in lines
    assert "topics.tsv:5: query id 2 is already on line 2 — ids must be unique" in lines
    assert any(x.startswith("test.qrels:2: ") and "'yes'" in x for x in lines)
    assert any(x.startswith("test.qrels:3: ") for x in lines)
    with pytest.raises(ImportRefused, match=r"topics.sgml:6: <top> is not closed"):
        import_trec(dataset=dataset, split="test", topics=read("trec_broken", "topics.sgml"), qrels=read("trec", "test.qrels"))
    assert counts(dataset) == (0, 0, 0, 0)


def test_changed_trec_qrels_add_a_version(dataset):
    trec(dataset)
    report = trec(dataset, qrels="test_v2.qrels")
    split = Split.objects.get(dataset=dataset, name="test")
    assert list(split.qrels_versions.values_list("version", flat=True)) == [2, 1]
    assert split.current_qrels.version == 1
    assert report.splits[0].qrels_created and not report.splits[0].published
    assert not trec(dataset, qrels="test_v2.qrels").changed


def test_an_import_keeps_the_hidden_flag_of_an_existing_split(dataset):
    Split.objects.create(dataset=dataset, name="test", kind="test", hidden=True)
    report = trec(dataset, hidden=False)
    assert Split.objects.get(dataset=dataset, name="test").hidden
    assert any("the split exists and is hidden; the import keeps that" in w for w in report.warnings)


# --- The command ------------------------------------------------------------------


def test_the_command_imports_bsard_and_reports_unchanged_the_second_time(dataset, capsys):
    call_command("import_dataset", str(DATA / "bsard"), format="bsard", dataset="bsard")
    out = capsys.readouterr().out
    assert "corpus: 20 documents (new)" in out and "split test (hidden, new): 6 topics" in out

    call_command("import_dataset", str(DATA / "bsard"), format="bsard", dataset="bsard")
    assert "unchanged: these files were already imported" in capsys.readouterr().out


def test_the_command_refuses_broken_files_and_writes_nothing(dataset):
    with pytest.raises(CommandError) as exc:
        call_command("import_dataset", str(DATA / "bsard_broken"), format="bsard", dataset="bsard")
    assert "questions_fr_test.csv:4: article_ids \"12a\"" in str(exc.value)
    assert counts(dataset) == (0, 0, 0, 0)


def test_the_command_needs_an_existing_dataset_or_create(db, capsys):
    with pytest.raises(CommandError, match="no dataset 'mine'"):
        call_command("import_dataset", str(DATA / "beir"), format="beir", dataset="mine")
    assert not Dataset.objects.exists()

    call_command(
        "import_dataset", str(DATA / "beir"), format="beir", dataset="mine", create=True, name="Mine", benchmark="b",
        benchmark_name="B", language="el",
    )
    ds = Dataset.objects.get(slug="mine")
    assert ds.benchmark.slug == "b" and ds.primary_measure == "R@100" and ds.splits.count() == 2


def test_an_imported_dataset_is_a_draft_with_its_language_and_benchmark_asked(db, client, capsys):
    """Never published at once, never a blank language pill, never a benchmark named after the dataset."""
    with pytest.raises(CommandError) as exc:
        call_command("import_dataset", str(DATA / "beir"), format="beir", dataset="mine", create=True, name="Mine",
                     benchmark="b")
    assert "--language CODE" in str(exc.value) and "--benchmark-name" in str(exc.value)
    assert not Dataset.objects.exists() and not Benchmark.objects.exists()
    call_command("import_dataset", str(DATA / "beir"), format="beir", dataset="mine", create=True, name="Mine",
                 benchmark="b", benchmark_name="Greek statutes", language="el")
    ds = Dataset.objects.get(slug="mine")
    assert not ds.is_published and ds.language == "el" and ds.benchmark.name == "Greek statutes"
    assert "created as a draft" in capsys.readouterr().out
    assert "Mine" not in client.get("/").content.decode()
    assert client.get(f"/d/{ds.slug}/").status_code == 404


def test_a_curator_publishes_a_draft_after_a_preview_of_its_card(db, client, staff):
    from django.urls import reverse

    call_command("load_cards", "bsard", stdout=io.StringIO())
    call_command("import_dataset", str(DATA / "beir"), format="beir", dataset="mine", create=True, name="Mine",
                 benchmark="b", benchmark_name="Greek statutes", language="el", stdout=io.StringIO())
    ds = Dataset.objects.get(slug="mine")
    client.force_login(staff)
    url = reverse("admin:catalogue_dataset_changelist")
    form = {"action": "publish_with_preview", "_selected_action": [ds.pk]}
    preview = client.post(url, form).content.decode()
    card = preview.split('<li class="card">', 1)[1].split("</li>", 1)[0]
    assert ">Mine</a>" in card and 'title="language">el</span>' in card and "Greek statutes" in preview
    assert not Dataset.objects.get(pk=ds.pk).is_published
    response = client.post(url, {**form, "confirm": "yes"})
    assert response.status_code == 302 and Dataset.objects.get(pk=ds.pk).is_published
    client.logout()
    home = client.get("/").content.decode()
    assert ">Mine</a>" in home
    assert home.index("Legal statutory retrieval") < home.index("Greek statutes")  # after the curated ones


def test_a_refused_create_import_creates_no_dataset(db):
    with pytest.raises(CommandError):
        call_command(
            "import_dataset", str(DATA / "beir_broken"), format="beir", dataset="mine", create=True, benchmark="b"
        )
    assert not Dataset.objects.exists() and not Benchmark.objects.exists()


def test_the_command_imports_trec_files(dataset, capsys):
    call_command(
        "import_dataset",
        format="trec",
        dataset="bsard",
        split="dev",
        topics=str(DATA / "trec" / "topics.tsv"),
        qrels=str(DATA / "trec" / "test.qrels"),
        corpus_ids=str(DATA / "trec" / "ids.txt"),
    )
    assert Split.objects.get(dataset=dataset, name="dev").current_qrels.n_topics == 5
    with pytest.raises(CommandError, match="--format trec needs --topics for a new split"):
        call_command("import_dataset", format="trec", dataset="bsard", split="test", qrels="x")
    with pytest.raises(CommandError, match="x: no such file"):  # an existing split's new version: qrels alone
        call_command("import_dataset", format="trec", dataset="bsard", split="dev", qrels="x")
