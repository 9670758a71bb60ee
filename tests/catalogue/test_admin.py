"""The curators' admin: pages open for staff only, the import form, publishing, no hidden labels shown."""

from __future__ import annotations

import io
import zipfile
from importlib import import_module
from pathlib import Path

import pytest
from django.apps import apps
from django.contrib import admin
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db.models import F
from django.forms.models import model_to_dict
from django.urls import reverse

from catalogue.cards import cards_load
from catalogue.importers import files_from_directory, import_bsard, import_trec
from catalogue.models import Benchmark, Corpus, Dataset, QrelsVersion, ReportedResult, Split, Topic
from catalogue.services import qrels_version_add
from curation.admin import SplitAdmin

DATA = Path(__file__).resolve().parent.parent / "data" / "import"
MODELS = [Benchmark, Dataset, Corpus, Split, Topic, QrelsVersion, ReportedResult]
SECRET = "secretdoc-42"


@pytest.fixture
def loaded(db):
    """The cards, a BSARD import, and a hidden split whose qrels judge a marker docid."""
    cards_load()
    bsard = Dataset.objects.get(slug="bsard")
    import_bsard(dataset=bsard, files=files_from_directory(DATA / "bsard"))
    qrels = (DATA / "trec" / "test.qrels").read_bytes() + f"1 0 {SECRET} 1\n".encode()
    import_trec(
        dataset=Dataset.objects.get(slug="greekbarretrieval"),
        split="test",
        topics=("topics.tsv", (DATA / "trec" / "topics.tsv").read_bytes()),
        qrels=("test.qrels", qrels),
        corpus_ids=("ids.txt", (DATA / "trec" / "ids.txt").read_bytes()),
        hidden=True,
    )
    return bsard


def admin_urls() -> list[str]:
    urls = []
    for model in MODELS:
        info = (model._meta.app_label, model._meta.model_name)
        urls.append(reverse("admin:{}_{}_changelist".format(*info)))
        obj = model.objects.order_by("pk").first()
        assert obj is not None, f"no {model.__name__} to open"
        urls.append(reverse("admin:{}_{}_change".format(*info), args=[obj.pk]))
    urls.append(reverse("admin:catalogue_dataset_import", args=[Dataset.objects.get(slug="bsard").pk]))
    urls.append(reverse("admin:catalogue_dataset_add"))
    urls.append(reverse("admin:index"))
    return urls


def test_every_admin_page_opens_for_staff(loaded, client, staff):
    client.force_login(staff)
    for url in admin_urls():
        response = client.get(url)
        assert response.status_code == 200, url


@pytest.mark.parametrize("who", ["participant", "anonymous"])
def test_admin_pages_send_others_to_the_login(loaded, client, alice, who):
    if who == "participant":
        client.force_login(alice)
    for url in admin_urls():
        response = client.get(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith(reverse("admin:login")), url
    response = client.post(
        reverse("admin:catalogue_dataset_import", args=[loaded.pk]),
        {"format": "bsard", "files": [SimpleUploadedFile("articles_fr.csv", b"id,article\n1,x\n")]},
    )
    assert response.status_code == 302
    assert Corpus.objects.get(dataset=loaded).n_documents == 20


def test_hidden_qrels_never_appear_in_the_admin(loaded, client, staff):
    client.force_login(staff)
    version = QrelsVersion.objects.get(split__dataset__slug="greekbarretrieval")
    urls = admin_urls() + [
        reverse("admin:catalogue_qrelsversion_change", args=[version.pk]),
        reverse("admin:catalogue_split_change", args=[version.split_id]),
    ]
    for url in urls:
        html = client.get(url).content.decode()
        assert SECRET not in html, url
        assert version.text()[:30] not in html, url
    # Searching for a judged docid finds nothing: the search does not look inside the judgments.
    search = client.get(reverse("admin:catalogue_qrelsversion_changelist") + f"?q={SECRET}").content.decode()
    assert "0 results" in search
    page = client.get(reverse("admin:catalogue_qrelsversion_change", args=[version.pk])).content.decode()
    assert version.sha256 in page and str(version.n_judgments) in page


def test_the_import_form_imports_uploaded_files_and_reports(db, client, staff):
    cards_load()
    bsard = Dataset.objects.get(slug="bsard")
    client.force_login(staff)
    url = reverse("admin:catalogue_dataset_import", args=[bsard.pk])
    assert "Import files" in client.get(reverse("admin:catalogue_dataset_change", args=[bsard.pk])).content.decode()

    uploads = [SimpleUploadedFile(p.name, p.read_bytes()) for p in sorted((DATA / "bsard").iterdir())]
    response = client.post(url, {"format": "bsard", "files": uploads, "hidden_splits": "test"})

    html = response.content.decode()
    assert response.status_code == 200
    assert "corpus: 20 documents (new)" in html
    assert "split test (hidden): 6 topics (6 new, 0 updated)" in html
    assert Split.objects.get(dataset=bsard, name="test").current_qrels.n_judgments == 6

    uploads = [SimpleUploadedFile(p.name, p.read_bytes()) for p in sorted((DATA / "bsard").iterdir())]
    html = client.post(url, {"format": "bsard", "files": uploads}).content.decode()
    assert "unchanged: these files were already imported" in html


def test_the_import_form_shows_refusals_and_writes_nothing(db, client, staff):
    cards_load()
    bsard = Dataset.objects.get(slug="bsard")
    client.force_login(staff)
    uploads = [SimpleUploadedFile(p.name, p.read_bytes()) for p in sorted((DATA / "bsard_broken").iterdir())]

    response = client.post(
        reverse("admin:catalogue_dataset_import", args=[bsard.pk]), {"format": "bsard", "files": uploads}
    )

    html = response.content.decode()
    assert "nothing was written" in html
    assert "questions_fr_test.csv:4: article_ids &quot;12a&quot; is not a list of integers" in html
    assert "articles_fr.csv:24: article id 5 is already on line 7" in html
    assert not Corpus.objects.filter(dataset=bsard).exists()
    assert not Topic.objects.filter(split__dataset=bsard).exists()


def test_the_import_form_takes_a_zipped_beir_folder_and_trec_files(db, client, staff):
    bench = Benchmark.objects.create(slug="b", name="B")
    ds = Dataset.objects.create(benchmark=bench, slug="gb", name="GB", language="el", measures=["R@100"],
                                primary_measure="R@100")
    client.force_login(staff)
    url = reverse("admin:catalogue_dataset_import", args=[ds.pk])
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in files_from_directory(DATA / "beir").items():
            z.writestr(f"greekbar/{name}", data)

    html = client.post(url, {
        "format": "beir", "files": [SimpleUploadedFile("greekbar.zip", buf.getvalue())], "hidden_splits": "test",
    }).content.decode()
    assert "split dev (public, new): 4 topics" in html and "split test (hidden, new): 6 topics" in html

    html = client.post(url, {
        "format": "trec", "split": "extra", "hidden": "on",
        "topics": SimpleUploadedFile("topics.tsv", (DATA / "trec" / "topics.tsv").read_bytes()),
        "qrels": SimpleUploadedFile("test.qrels", (DATA / "trec" / "test.qrels").read_bytes()),
    }).content.decode()
    assert "split extra (hidden, new): 6 topics" in html
    assert Split.objects.get(dataset=ds, name="extra").hidden

    html = client.post(url, {"format": "trec", "split": "extra"}).content.decode()
    assert "Needed for the trec format." in html


def test_a_check_only_import_writes_nothing(db, client, staff):
    cards_load()
    bsard = Dataset.objects.get(slug="bsard")
    client.force_login(staff)
    uploads = [SimpleUploadedFile(p.name, p.read_bytes()) for p in sorted((DATA / "bsard").iterdir())]
    html = client.post(
        reverse("admin:catalogue_dataset_import", args=[bsard.pk]),
        {"format": "bsard", "files": uploads, "dry_run": "on"},
    ).content.decode()
    assert "Check only — nothing was written" in html
    assert not Corpus.objects.filter(dataset=bsard).exists()


def test_the_publish_action_makes_a_version_current(loaded, client, staff):
    test = Split.objects.get(dataset=loaded, name="test")
    v1 = test.current_qrels
    v2 = QrelsVersion.objects.create(split=test, version=2, qrels_gz=b"", sha256="x" * 64, n_topics=1)
    client.force_login(staff)
    changelist = reverse("admin:catalogue_qrelsversion_changelist")

    # A hidden split: v2 (no judgment) removes v1's few, fewer than the split's minimum batch. The action refuses
    # it, writes nothing, and asks for a reason on its own page.
    n = v2.judgments_changed_from(v1)
    assert 0 < n < test.min_judgment_batch
    response = client.post(changelist, {"action": "publish", "_selected_action": [v2.pk]}, follow=True)
    page = response.content.decode()
    test.refresh_from_db()
    assert test.current_qrels == v1 and test.pending_qrels is None
    assert f"changes {n} judgments against the current v1" in page and f"at least {test.min_judgment_batch}" in page
    assert 'name="small_change_reason"' in page and "Leave it for a batch" in page

    # With a reason (the page's form posts it back), it is published, and the reason recorded and shown.
    response = client.post(changelist, {"action": "publish", "_selected_action": [v2.pk], "confirm": "yes",
                                        "small_change_reason": "the release's qrels file was truncated"},
                           follow=True)
    test.refresh_from_db()
    v2.refresh_from_db()
    assert test.current_qrels == v2
    assert "published; 0 submissions queued for rescoring" in response.content.decode()
    assert (v2.small_change_reason, v2.small_change_by) == ("the release's qrels file was truncated", staff)
    listing = client.get(changelist).content.decode()
    assert "published as a small change: the release&#x27;s qrels file was truncated" in listing

    response = client.post(changelist, {"action": "publish", "_selected_action": [v1.pk, v2.pk]}, follow=True)
    assert "Choose one version per split" in response.content.decode()
    test.refresh_from_db()
    assert test.current_qrels == v2


def test_qrels_versions_cannot_be_added_or_deleted_in_the_admin(loaded, client, staff):
    client.force_login(staff)
    version = QrelsVersion.objects.first()
    assert client.get(reverse("admin:catalogue_qrelsversion_add")).status_code == 403
    assert client.get(reverse("admin:catalogue_qrelsversion_delete", args=[version.pk])).status_code == 403


def test_saving_a_split_in_the_admin_does_not_undo_a_switch_of_qrels_made_meanwhile(tiny_dataset, staff, rf):
    """The admin reads the row, then saves it: a qrels switch (and cache version) stored in between must stay."""
    split = tiny_dataset.splits.get(name="test")
    read_by_admin = Split.objects.get(pk=split.pk)
    v2, _ = qrels_version_add(split=split, qrels={"q1": {"d1": 1}, "q2": {"d3": 1}}, publish=False)
    Split.objects.filter(pk=split.pk).update(current_qrels=v2, cache_version=F("cache_version") + 1)  # a worker
    request = rf.post("/admin/")
    request.user = staff
    model_admin = SplitAdmin(Split, admin.site)
    form_class = model_admin.get_form(request, read_by_admin, change=True)
    data = {k: v for k, v in model_to_dict(read_by_admin).items() if v is not None}
    data["accepts_submissions"] = False
    form = form_class(data, instance=read_by_admin)
    assert form.is_valid(), form.errors
    model_admin.save_model(request, form.save(commit=False), form, change=True)
    split.refresh_from_db()
    assert split.accepts_submissions is False  # the curator's change
    assert split.current_qrels_id == v2.pk, "the admin's save put the old qrels version back"
    assert split.cache_version > read_by_admin.cache_version


def _split_form(split: Split, staff, rf, **changes):
    request = rf.post("/admin/")
    request.user = staff
    model_admin = SplitAdmin(Split, admin.site)
    form_class = model_admin.get_form(request, split if split.pk else None, change=split.pk is not None)
    data = {k: v for k, v in model_to_dict(split).items() if v is not None}
    data.update(changes)
    return form_class(data, instance=split if split.pk else None)


def test_a_hidden_split_of_five_topics_or_more_cannot_turn_the_ladder_off(tiny_dataset, staff, rf):
    """Without the Ladder every score of a hidden split is released: a probe run reads a judgment per run."""
    split = tiny_dataset.splits.get(name="test")  # 4 topics, the Ladder off: no run could be significant there
    assert _split_form(split, staff, rf, ladder=False).is_valid()
    Topic.objects.create(split=split, qid="q5", text="Question 5?")
    split.ladder = True
    split.save()
    form = _split_form(split, staff, rf, ladder=False)
    assert not form.is_valid()
    assert "hidden split of 5 topics releases scores only through the Ladder" in form.errors["ladder"][0]
    assert _split_form(split, staff, rf, ladder=False, hidden=False).is_valid()  # a public split has no Ladder
    new = Split(dataset=tiny_dataset, name="new", kind="test", hidden=True, ladder=False)
    form = _split_form(new, staff, rf)
    assert not form.is_valid() and "A new hidden split" in form.errors["ladder"][0]


def test_the_migration_turns_the_ladder_back_on_for_hidden_splits_of_five_topics_or_more(tiny_dataset):
    migration = import_module("catalogue.migrations.0012_hidden_splits_keep_the_ladder")
    small = tiny_dataset.splits.get(name="test")  # 4 topics, the Ladder off
    big = Split.objects.create(dataset=tiny_dataset, name="big", kind="test", hidden=True, ladder=False)
    Topic.objects.bulk_create(Topic(split=big, qid=f"b{i}", text="?") for i in range(5))
    public = tiny_dataset.splits.get(name="dev")
    Topic.objects.create(split=public, qid="q5", text="?")
    migration.ladder_on(apps, None)
    assert [Split.objects.get(pk=s.pk).ladder for s in (small, big, public)] == [False, True, False]


# --- The dataset form: a draft, measures ticked from the registry (#38, item 6) ---------------------------------


def _inline_management(response) -> dict[str, str]:
    """The inlines' management forms of an admin change page, empty (no split, no reported result added)."""
    data = {}
    for inline in response.context["inline_admin_formsets"]:
        prefix = inline.formset.prefix
        data.update({f"{prefix}-TOTAL_FORMS": "0", f"{prefix}-INITIAL_FORMS": str(inline.formset.initial_form_count()),
                     f"{prefix}-MIN_NUM_FORMS": "0", f"{prefix}-MAX_NUM_FORMS": "1000"})
    return data


def test_a_new_dataset_starts_as_a_draft_with_measures_ticked_from_the_registry(db, client, staff):
    client.force_login(staff)
    url = reverse("admin:catalogue_dataset_add")
    page = client.get(url)
    html = page.content.decode()
    assert 'name="is_published"' in html and 'name="is_published" checked' not in html
    form = page.context["adminform"].form
    assert form["is_published"].value() is False
    # Every family of the metric core's registry is offered as checkboxes, and macro-F1 for classification.
    assert 'type="checkbox" name="measures" value="R@100"' in html
    for name in ("nDCG@10", "MAP@1000", "MRR@10", "RP", "bpref", "Success@10", "P@5", "macro-F1"):
        assert f'value="{name}"' in html, name
    benchmark = Benchmark.objects.create(slug="mine", name="Mine")
    post = {**_inline_management(page), "benchmark": benchmark.pk, "slug": "mine", "name": "My set", "language": "fr",
            "task": "retrieval", "order": "0", "measures": ["nDCG@10", "R@100"], "other_measures": "R@3",
            "primary_measure": "R@100", "relevance_threshold": "1", "depth": "1000", "category_min_queries": "10",
            "score_precision": "float32", "empty_queries": "omit", "description": "", "citation": "", "homepage": "",
            "license": "", "docid_example": ""}

    refused = client.post(url, {**post, "primary_measure": "MAP@100"})
    assert refused.status_code == 200 and not Dataset.objects.exists()
    assert ("The primary measure, MAP@100, is not among the measures chosen (R@100, nDCG@10, R@3): tick it above, "
            "or choose one of those.") in refused.content.decode().replace("&#x27;", "'")

    unknown = client.post(url, {**post, "other_measures": "R@3, Recall@5"})
    assert unknown.status_code == 200 and "unknown measure" in unknown.content.decode().replace("&#x27;", "'")
    assert not Dataset.objects.exists()

    saved = client.post(url, post)
    assert saved.status_code == 302, saved.content.decode()[:3000]
    dataset = Dataset.objects.get(slug="mine")
    assert dataset.measures == ["R@100", "nDCG@10", "R@3"] and dataset.primary_measure == "R@100"
    assert not dataset.is_published  # a draft: published from the list after the card's preview

    # Editing keeps the stored order; a name outside the list is shown ticked; a new one goes last.
    change = reverse("admin:catalogue_dataset_change", args=[dataset.pk])
    page = client.get(change)
    assert page.context["adminform"].form["measures"].value() == ["R@100", "nDCG@10", "R@3"]
    assert 'value="R@3"' in page.content.decode()
    edited = client.post(change, {**post, **_inline_management(page),
                                  "measures": ["MAP@100", "R@3", "R@100", "nDCG@10"], "other_measures": ""})
    assert edited.status_code == 302
    dataset.refresh_from_db()
    assert dataset.measures == ["R@100", "nDCG@10", "R@3", "MAP@100"]


def test_a_classification_dataset_picks_macro_f1_and_its_languages(db, client, staff):
    benchmark = Benchmark.objects.create(slug="mine", name="Mine")
    areas = Dataset.objects.create(benchmark=benchmark, slug="areas", name="Areas", language="de,fr,it",
                                   task=Dataset.Task.SINGLE, measures=["macro-F1", "macro-F1/fr"],
                                   primary_measure="macro-F1")
    client.force_login(staff)
    page = client.get(reverse("admin:catalogue_dataset_change", args=[areas.pk]))
    html = page.content.decode()
    assert page.context["adminform"].form["measures"].value() == ["macro-F1", "macro-F1/fr"]
    for name in ("macro-F1", "macro-F1/de", "macro-F1/fr", "macro-F1/it"):
        assert f'value="{name}"' in html, name
