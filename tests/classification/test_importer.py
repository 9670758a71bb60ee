"""``import_dataset --format classification``: JSONL and CSV splits, refusals with file:line, idempotence."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from catalogue.importers import ImportRefused, import_classification, parse_classification
from catalogue.models import Benchmark, Dataset, QrelsVersion, Split, Topic
from evaluation.classification import read_gold

from .conftest import jsonl

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("import_dataset", *args, stdout=out)
    return out.getvalue()


def write(tmp_path, name: str, content: bytes | str) -> str:
    path = tmp_path / name
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    return str(path)


SINGLE = jsonl([
    {"id": "a1", "text": "Le bail est résilié.", "label": "civil", "language": "fr"},
    {"id": "a2", "text": "Der Dieb wird bestraft.", "label": "criminal", "language": "de"},
    {"id": 3, "text": "L'impôt est dû.", "label": "tax", "language": "fr"},
])


@pytest.fixture
def dataset():
    bench = Benchmark.objects.create(slug="lex", name="Lex")
    return Dataset.objects.create(benchmark=bench, slug="areas", name="Areas", language="fr,de", task="single",
                                  measures=["macro-F1"], primary_measure="macro-F1")


def test_it_imports_a_jsonl_split_as_topics_and_a_hidden_gold_version(dataset, tmp_path):
    out = run("--format", "classification", "--dataset", "areas", "--task", "single", "--split", "test",
              "--hidden", "--file", write(tmp_path, "test.jsonl", SINGLE))
    split = Split.objects.get(dataset=dataset, name="test")
    assert split.hidden and split.kind == "test"
    topics = {t.qid: t for t in split.topics.all()}
    assert set(topics) == {"a1", "a2", "3"} and topics["a2"].category == "de"
    assert topics["a1"].text == "Le bail est résilié."
    version = split.current_qrels
    gold = read_gold(version.text().encode(), task="single")
    assert gold.answers == {"a1": "civil", "a2": "criminal", "3": "tax"}
    assert gold.languages == {"a1": "fr", "a2": "de", "3": "fr"}
    assert "3 examples (3 new, 0 updated); 3 gold labels (3 distinct labels); gold v1 added and published" in out
    # Counts only: the report never shows a hidden label.
    assert "civil" not in out and "criminal" not in out


def test_importing_the_same_file_again_changes_nothing(dataset, tmp_path):
    path = write(tmp_path, "test.jsonl", SINGLE)
    args = ("--format", "classification", "--dataset", "areas", "--task", "single", "--split", "test", "--file", path)
    run(*args)
    out = run(*args)
    assert QrelsVersion.objects.count() == 1 and Topic.objects.count() == 3
    assert "gold unchanged (v1, current)" in out and "nothing was written" in out


def test_new_gold_adds_an_unpublished_version_unless_asked(dataset, tmp_path):
    args = ("--format", "classification", "--dataset", "areas", "--task", "single", "--split", "test")
    run(*args, "--file", write(tmp_path, "v1.jsonl", SINGLE))
    changed = SINGLE.replace(b'"label": "tax"', b'"label": "civil"')
    out = run(*args, "--file", write(tmp_path, "v2.jsonl", changed))
    split = Split.objects.get(name="test")
    assert QrelsVersion.objects.filter(split=split).count() == 2 and split.current_qrels.version == 1
    assert "gold v2 added, NOT published" in out
    run(*args, "--file", write(tmp_path, "v2.jsonl", changed), "--publish")
    split.refresh_from_db()
    assert split.current_qrels.version == 2


def test_it_imports_csv_for_each_task(tmp_path):
    bench = Benchmark.objects.create(slug="lex", name="Lex")
    single = "id,text,label,language\nx1,\"Un texte, avec virgule\",civil,fr\nx2,Ein Text,tax,de\n"
    multi = "id,text,labels\nm1,Texte,civil|tax\nm2,Texte,\nm3,Texte,\"[\"\"tax\"\"]\"\n"
    ner = "id\ttokens\ttags\tlanguage\ns1\tAnna Meier klagt\tB-PER I-PER O\tde\n"
    for task, name, content in (("single", "s.csv", single), ("multi", "m.csv", multi), ("ner", "n.tsv", ner)):
        ds = Dataset.objects.create(benchmark=bench, slug=f"ds-{task}", name=task, language="x", task=task,
                                    measures=["macro-F1"], primary_measure="macro-F1")
        import_classification(dataset=ds, task=task, split="test", file=(name, content.encode()))
        version = Split.objects.get(dataset=ds).current_qrels
        gold = read_gold(version.text().encode(), task=task)
        if task == "single":
            assert gold.answers == {"x1": "civil", "x2": "tax"} and gold.languages == {"x1": "fr", "x2": "de"}
            assert Topic.objects.get(split__dataset=ds, qid="x1").text == "Un texte, avec virgule"
        elif task == "multi":
            assert gold.answers == {"m1": ("civil", "tax"), "m2": (), "m3": ("tax",)}
        else:
            assert gold.answers == {"s1": ("B-PER", "I-PER", "O")}
            topic = Topic.objects.get(split__dataset=ds)
            assert topic.extra == {"tokens": ["Anna", "Meier", "klagt"]} and topic.text == "Anna Meier klagt"


@pytest.mark.parametrize(
    ("task", "name", "content", "expected"),
    [
        ("single", "t.jsonl", b'{"id": "a", "text": "x", "label": "c"}\nnot json\n', "t.jsonl:2: not valid JSON"),
        ("single", "t.jsonl", b'{"id": "a", "text": "x", "label": "c"}\n{"id": "a", "text": "y", "label": "d"}\n',
         "t.jsonl:2: id 'a' already on line 1"),
        ("single", "t.jsonl", b'\n{"id": "a", "text": "x"}\n', 't.jsonl:2: no "label"'),
        ("single", "t.jsonl", b'{"id": "a", "label": "c"}\n', 't.jsonl:1: no "text"'),
        ("multi", "t.jsonl", b'{"id": "a", "text": "x", "labels": "c"}\n', 't.jsonl:1: "labels" must be a JSON array'),
        ("ner", "t.jsonl", b'{"id": "a", "tokens": ["A", "B"], "tags": ["B-PER"]}\n',
         "t.jsonl:1: 2 tokens but 1 tags"),
        ("ner", "t.jsonl", b'{"id": "a", "tokens": ["A"], "tags": ["PER"]}\n', "t.jsonl:1: tag 1 'PER' is not a BIO tag"),
        ("single", "t.csv", b"id,text,label\na,x,c\n\nb,y\n", "t.csv:4: no \"label\""),
        ("single", "t.csv", b"text,label\nx,c\n", "t.csv:1: the first row must name the columns"),
        ("single", "t.jsonl", b"\xff\xfe", "t.jsonl:1: byte 0xff is not UTF-8"),
        ("single", "t.jsonl", b"\n\n", "t.jsonl: holds no example"),
    ],
    ids=["json", "duplicate", "no-label", "no-text", "labels-type", "tag-count", "bio", "csv-short-row",
         "csv-header", "utf8", "empty"],
)
def test_it_refuses_bad_files_with_file_line_reason(task, name, content, expected):
    with pytest.raises(ImportRefused) as info:
        parse_classification(task=task, split="test", file=(name, content))
    assert any(line.startswith(expected) for line in info.value.lines), info.value.lines


def test_a_refused_file_writes_nothing_and_the_command_says_why(dataset, tmp_path):
    bad = SINGLE + b'{"id": "a9", "text": "x", "label": ["civil"]}\n'
    with pytest.raises(CommandError) as info:
        run("--format", "classification", "--dataset", "areas", "--task", "single", "--split", "test",
            "--file", write(tmp_path, "bad.jsonl", bad))
    assert "refused, nothing was written" in str(info.value) and "bad.jsonl:4:" in str(info.value)
    assert not Split.objects.exists() and not Topic.objects.exists()


def test_it_refuses_a_file_of_another_task_than_the_dataset(dataset, tmp_path):
    ner = jsonl([{"id": "s", "tokens": ["A"], "tags": ["O"]}])
    with pytest.raises(CommandError) as info:
        run("--format", "classification", "--dataset", "areas", "--task", "ner", "--split", "test",
            "--file", write(tmp_path, "n.jsonl", ner))
    assert "single-label classification dataset" in str(info.value) and "--task single" in str(info.value)
    assert not Split.objects.exists()


def test_create_makes_a_macro_f1_dataset_of_the_task(tmp_path):
    run("--format", "classification", "--dataset", "new-areas", "--task", "multi", "--split", "train",
        "--file", write(tmp_path, "train.jsonl", jsonl([{"id": "1", "text": "t", "labels": ["a", "b"]}])),
        "--create", "--name", "New areas", "--benchmark", "lex2", "--benchmark-name", "Lex 2", "--language", "fr")
    ds = Dataset.objects.get(slug="new-areas")
    assert ds.task == "multi" and ds.measures == ["macro-F1"] and ds.primary_measure == "macro-F1"
    ds.full_clean()


def test_the_command_needs_task_split_and_file(dataset):
    with pytest.raises(CommandError, match="--task, --split, --file"):
        run("--format", "classification", "--dataset", "areas")


def test_a_jsonl_line_may_carry_more_fields(dataset):
    content = json.dumps({"id": "a", "text": "x", "label": "c", "source": "court"}).encode() + b"\n"
    report = import_classification(dataset=dataset, task="single", split="dev", file=("d.jsonl", content))
    assert report.splits[0].topics_created == 1


def test_a_curator_imports_a_split_in_the_admin(dataset, staff, client):
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.urls import reverse

    client.force_login(staff)
    url = reverse("admin:catalogue_dataset_import", args=[dataset.pk])
    form = {"format": "classification", "split": "test", "hidden": "on", "note": ""}
    page = client.post(url, {**form, "files": SimpleUploadedFile("test.jsonl", SINGLE)})
    assert page.status_code == 200 and "gold v1 added and published" in page.content.decode()
    split = Split.objects.get(dataset=dataset, name="test")
    assert split.hidden and split.topics.count() == 3
    bad = client.post(url, {**form, "files": SimpleUploadedFile("bad.jsonl", b'{"id": "a"}\n')})
    assert "bad.jsonl:1: no" in bad.content.decode() and QrelsVersion.objects.count() == 1


def test_the_admin_refuses_a_classification_file_for_a_retrieval_dataset(tiny_dataset, staff, client):
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.urls import reverse

    client.force_login(staff)
    url = reverse("admin:catalogue_dataset_import", args=[tiny_dataset.pk])
    page = client.post(url, {"format": "classification", "split": "x", "files": SimpleUploadedFile("t.jsonl", SINGLE)})
    assert "is a retrieval dataset" in page.content.decode()
    assert not Split.objects.filter(dataset=tiny_dataset, name="x").exists()
