"""The demo's classification task and its baselines: "Demo legal area classification" (fr, de, it).

Why: with the demo retrieval dataset it makes the demo benchmark a *suite*,
so a fresh install shows a suite table with an aggregate at once.

* :func:`generate_areas` writes short legal snippets in French, German and
  Italian, each labelled with its area of law (civil, criminal, labour, tax,
  administrative; civil is the most frequent), from small vocabularies — 600
  per language, 400 for the public train split and 200 for the hidden test
  split. Each snippet carries two or three terms of its area and, often, one
  of another area; a few carry more of another area's terms than of their
  own, so a bag-of-words model is good but not perfect. Seeded: the same
  seed gives the same bytes.
* Baselines, trained on the train split only: a majority-class predictor;
  "TF-IDF", a multinomial logistic regression over sublinear tf-idf features
  written with numpy; and a seeded random label. "TF-IDF" and "Random" share
  their names with retrieval baselines of the demo, so the suite joins them
  into complete rows (same user, same system name); "Majority class" and
  BM25 exist on one dataset each and show the suite's gaps.
* Everything goes through the product's paths: the gold through the
  classification importer (``parse_classification``, stored and published by ``submissions.services.release_import``),
  each baseline's predictions through ``submission_create`` and
  ``submission_score_now`` like any upload.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from django.db import transaction

from catalogue.importers import parse_classification
from catalogue.models import Dataset, DataTerms, Split
from catalogue.services import data_terms_publish
from evaluation.measures import MACRO_F1, language_measure
from submissions.services import release_import

from .uploads import baseline_store

DATASET_SLUG = "demo-areas"
DATASET_NAME = "Demo legal area classification"
SEED = 2024
LANGUAGES = ("fr", "de", "it")
PER_LANGUAGE = 600
TRAIN_PER_LANGUAGE = 400
SPLIT_HIDDEN = {"train": False, "test": True}
BASELINE_SPLIT = "test"
MEASURES = [MACRO_F1, *(language_measure(language) for language in LANGUAGES)]

#: Areas and how often they occur (civil most: the majority class).
AREAS = (("civil", 0.32), ("labour", 0.22), ("criminal", 0.19), ("administrative", 0.15), ("tax", 0.12))

TERMS = {
    "fr": {
        "civil": "contrat|bail|propriété|succession|divorce|pension alimentaire|servitude|donation|mariage|"
                 "responsabilité civile|usufruit|copropriété",
        "criminal": "vol|infraction|prévenu|peine|détention|escroquerie|casier judiciaire|parquet|homicide|"
                    "récidive|amende pénale|enquête",
        "labour": "licenciement|salaire|préavis|employeur|travailleur|congé annuel|contrat de travail|syndicat|"
                  "heures supplémentaires|accident du travail|chômage|convention collective",
        "tax": "impôt|TVA|déclaration fiscale|revenu imposable|précompte|exonération|contribuable|taxe foncière|"
               "redressement|administration fiscale|déduction|accises",
        "administrative": "permis|commune|recours administratif|fonctionnaire|marché public|urbanisme|"
                          "autorisation|Conseil d'État|subvention|expropriation|autorité|règlement communal",
    },
    "de": {
        "civil": "Vertrag|Miete|Eigentum|Erbschaft|Scheidung|Unterhalt|Dienstbarkeit|Schenkung|Ehe|Haftpflicht|"
                 "Nutzniessung|Stockwerkeigentum",
        "criminal": "Diebstahl|Straftat|Beschuldigter|Strafe|Haft|Betrug|Strafregister|Staatsanwaltschaft|Tötung|"
                    "Rückfall|Busse|Ermittlung",
        "labour": "Kündigung|Lohn|Kündigungsfrist|Arbeitgeber|Arbeitnehmer|Ferien|Arbeitsvertrag|Gewerkschaft|"
                  "Überstunden|Arbeitsunfall|Arbeitslosigkeit|Gesamtarbeitsvertrag",
        "tax": "Steuer|Mehrwertsteuer|Steuererklärung|steuerbares Einkommen|Verrechnungssteuer|Steuerbefreiung|"
               "Steuerpflichtiger|Liegenschaftssteuer|Nachsteuer|Steuerverwaltung|Abzug|Zoll",
        "administrative": "Bewilligung|Gemeinde|Verwaltungsbeschwerde|Beamter|öffentliche Beschaffung|Raumplanung|"
                          "Baubewilligung|Bundesverwaltungsgericht|Subvention|Enteignung|Behörde|Verordnung",
    },
    "it": {
        "civil": "contratto|locazione|proprietà|successione|divorzio|alimenti|servitù|donazione|matrimonio|"
                 "responsabilità civile|usufrutto|comproprietà",
        "criminal": "furto|reato|imputato|pena|detenzione|truffa|casellario giudiziale|procura pubblica|omicidio|"
                    "recidiva|multa|indagine",
        "labour": "licenziamento|salario|termine di disdetta|datore di lavoro|lavoratore|vacanze|"
                  "contratto di lavoro|sindacato|ore straordinarie|infortunio professionale|disoccupazione|"
                  "contratto collettivo",
        "tax": "imposta|IVA|dichiarazione fiscale|reddito imponibile|imposta preventiva|esenzione|contribuente|"
               "imposta immobiliare|ricupero d'imposta|amministrazione fiscale|deduzione|dazio",
        "administrative": "permesso|comune|ricorso amministrativo|funzionario|appalto pubblico|"
                          "pianificazione del territorio|licenza edilizia|tribunale amministrativo federale|"
                          "sussidio|espropriazione|autorità|ordinanza",
    },
}

TEMPLATES = {
    "fr": (
        "Le tribunal examine {a} ainsi que {b}.",
        "La partie conteste {a} et invoque {b} ainsi que {c}.",
        "Question relative à {a}, à {b} et à {c}.",
        "Le requérant soutient que {a} concerne {b}.",
        "Selon l'article {n}, {a} dépend de {b} et de {c}.",
    ),
    "de": (
        "Das Gericht prüft {a} sowie {b}.",
        "Die Partei bestreitet {a} und beruft sich auf {b} sowie {c}.",
        "Frage betreffend {a}, {b} und {c}.",
        "Der Beschwerdeführer macht geltend, {a} betreffe {b}.",
        "Gemäss Artikel {n} hängt {a} von {b} und {c} ab.",
    ),
    "it": (
        "Il tribunale esamina {a} nonché {b}.",
        "La parte contesta {a} e invoca {b} nonché {c}.",
        "Questione relativa a {a}, {b} e {c}.",
        "Il ricorrente sostiene che {a} riguarda {b}.",
        "Secondo l'articolo {n}, {a} dipende da {b} e da {c}.",
    ),
}


@dataclass(frozen=True)
class Example:
    id: str
    text: str
    label: str
    language: str
    split: str


def generate_areas(seed: int = SEED) -> list[Example]:
    """The snippets, in a fixed order (language, then number); train first within each language."""
    rng = random.Random(seed)
    labels = [a for a, _ in AREAS]
    weights = [w for _, w in AREAS]
    out: list[Example] = []
    for language in LANGUAGES:
        terms = {area: TERMS[language][area].split("|") for area in labels}
        for i in range(1, PER_LANGUAGE + 1):
            label = rng.choices(labels, weights)[0]
            other = rng.choice([a for a in labels if a != label])
            r = rng.random()
            if r < 0.12:  # mostly about another matter: the hard cases
                words = [rng.choice(terms[label]), *rng.sample(terms[other], 2)]
            elif r < 0.65:  # a confounding term from another area
                words = [*rng.sample(terms[label], 2), rng.choice(terms[other])]
            else:
                words = rng.sample(terms[label], 3)
            rng.shuffle(words)
            template = rng.choice(TEMPLATES[language])
            text = template.format(a=words[0], b=words[1], c=words[2], n=rng.randint(1, 400))
            text = text[0].upper() + text[1:]
            split = "train" if i <= TRAIN_PER_LANGUAGE else "test"
            out.append(Example(id=f"{language}-{i:04d}", text=text, label=label, language=language, split=split))
    return out


def gold_jsonl(examples: list[Example], split: str) -> bytes:
    """The split's examples as the classification importer reads them (id, text, label, language)."""
    return "".join(
        json.dumps({"id": e.id, "text": e.text, "label": e.label, "language": e.language}, ensure_ascii=False) + "\n"
        for e in examples
        if e.split == split
    ).encode()


# --- baselines ---------------------------------------------------------------------------------

_TOKEN = re.compile(r"(?u)\b\w\w+\b")


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


class TfidfLogisticRegression:
    """Multinomial logistic regression over sublinear, L2-normalised tf-idf features (numpy, full batch).

    Small on purpose: a few hundred words and five classes, fit by gradient
    descent on the mean cross-entropy with an L2 penalty. Deterministic.
    """

    def __init__(self, *, l2: float = 1e-3, steps: int = 120, learning_rate: float = 5.0):
        self.l2, self.steps, self.learning_rate = l2, steps, learning_rate

    def _features(self, texts: list[str]) -> np.ndarray:
        x = np.zeros((len(texts), len(self.vocab)), dtype=np.float64)
        for row, text in enumerate(texts):
            for token in _tokens(text):
                j = self.vocab.get(token)
                if j is not None:
                    x[row, j] += 1.0
        nz = x > 0
        x[nz] = 1.0 + np.log(x[nz])
        x *= self.idf
        norms = np.linalg.norm(x, axis=1, keepdims=True)
        return x / np.where(norms == 0, 1.0, norms)

    def fit(self, texts: list[str], labels: list[str]) -> TfidfLogisticRegression:
        self.vocab: dict[str, int] = {}
        for text in texts:
            for token in _tokens(text):
                self.vocab.setdefault(token, len(self.vocab))
        self.idf = np.ones(len(self.vocab))
        counts = np.zeros(len(self.vocab))
        for text in texts:
            for token in set(_tokens(text)):
                counts[self.vocab[token]] += 1
        self.idf = np.log((1 + len(texts)) / (1 + counts)) + 1.0
        self.classes = sorted(set(labels))
        x = self._features(texts)
        y = np.zeros((len(labels), len(self.classes)))
        y[np.arange(len(labels)), [self.classes.index(label) for label in labels]] = 1.0
        xt = np.ascontiguousarray(x.T)  # a transposed view makes every step's product several times slower
        self.w = np.zeros((x.shape[1], len(self.classes)))
        self.b = np.zeros(len(self.classes))
        for _ in range(self.steps):
            p = self._softmax(x @ self.w + self.b)
            grad = (p - y) / len(labels)
            self.w -= self.learning_rate * (xt @ grad + self.l2 * self.w)
            self.b -= self.learning_rate * grad.sum(axis=0)
        return self

    @staticmethod
    def _softmax(z: np.ndarray) -> np.ndarray:
        z = z - z.max(axis=1, keepdims=True)
        e = np.exp(z)
        return e / e.sum(axis=1, keepdims=True)

    def predict(self, texts: list[str]) -> list[str]:
        scores = self._features(texts) @ self.w + self.b
        return [self.classes[i] for i in scores.argmax(axis=1)]


@dataclass(frozen=True)
class AreaBaseline:
    key: str
    system_name: str
    family: str
    description: str


AREA_BASELINES = (
    AreaBaseline("tfidf", "TF-IDF", "lexical",
                 "Multinomial logistic regression over sublinear tf-idf features (1 + log tf, smoothed idf, L2 "
                 "norm) of the train split's words, written with numpy. Produced by `manage.py load_demo`."),
    AreaBaseline("majority", "Majority class", "other",
                 "Predicts the train split's most frequent area for every snippet. Produced by `manage.py load_demo`."),
    AreaBaseline("random", "Random", "other",
                 "A seeded random area for every snippet (uniform over the train split's areas): the floor. "
                 "Produced by `manage.py load_demo`."),
)


def area_predictions(examples: list[Example], *, split: str = BASELINE_SPLIT, seed: int = SEED) -> dict[str, bytes]:
    """Each baseline's JSONL prediction file for ``split``, trained on the train split: ``{key: bytes}``."""
    train = [e for e in examples if e.split == "train"]
    target = [e for e in examples if e.split == split]
    labels = sorted({e.label for e in train})
    counts = {label: sum(1 for e in train if e.label == label) for label in labels}
    majority = max(labels, key=lambda label: (counts[label], label))
    model = TfidfLogisticRegression().fit([e.text for e in train], [e.label for e in train])
    rng = random.Random(seed + 1)
    answers = {
        "tfidf": model.predict([e.text for e in target]),
        "majority": [majority] * len(target),
        "random": [rng.choice(labels) for _ in target],
    }
    return {
        key: "".join(json.dumps({"id": e.id, "label": label}) + "\n" for e, label in zip(target, values, strict=True)).encode()
        for key, values in answers.items()
    }


# --- loading ------------------------------------------------------------------------------------


#: The dataset's BibTeX: the file that generates it exists in the project (tests/catalogue/test_bibtex.py).
CITATION = (
    "@misc{lexboard-demo-areas,\n  title        = {Lexboard demo legal area classification (synthetic)},\n"
    "  author       = {{Lexboard}},\n"
    "  howpublished = {Generated by demo/classification.py in the Lexboard source code},\n  year         = {2026}\n}"
)
#: What installs made before held (it named a file that does not exist); replaced at a start if left as it was.
OLD_CITATION = (
    "@misc{lexboard-demo-areas,\n  title = {Lexboard demo legal area classification (synthetic)},\n"
    "  note = {Generated by leaderboard/demo/classification.py},\n  year = {2026}\n}"
)


def areas_dataset_get_or_create(*, benchmark):
    """The classification dataset of the demo suite, created with its card the first time (then left alone, but
    for the old citation nobody changed)."""
    Dataset.objects.filter(slug=DATASET_SLUG, citation=OLD_CITATION).update(citation=CITATION)
    return Dataset.objects.get_or_create(
        slug=DATASET_SLUG,
        defaults={
            "benchmark": benchmark,
            "name": DATASET_NAME,
            "language": ",".join(LANGUAGES),
            "task": Dataset.Task.SINGLE,
            "description": (
                "A synthetic single-label classification task generated by code: short legal snippets in French, "
                "German and Italian, each labelled with its area of law (civil, criminal, labour, tax, "
                "administrative). 600 snippets per language: 400 in the public train split, 200 in the hidden "
                "test split. Scored by macro-F1, as LEXTREME scores its classification tasks, overall and per "
                "language. Submit a JSON Lines file with one {\"id\", \"label\"} object per test snippet. It is "
                "not legal advice and not real law."
            ),
            "license": "CC0 1.0 (generated data)",
            "measures": list(MEASURES),
            "primary_measure": MACRO_F1,
            "order": 1,
            "citation": CITATION,
        },
    )


@dataclass
class AreasReport:
    dataset_created: bool
    import_lines: list[str]
    baselines: list  # BaselineOutcome of demo.services


AREAS_TERMS_TITLE = "Demo data licence (generated text, CC BY 4.0)"
AREAS_TERMS_TEXT = """The snippets of this dataset are generated by the demo's code; no real legal text is in them.

You may use them for research and teaching, and share what you make with them, under CC BY 4.0: """ \
    """name the source ("Lexboard demo legal area classification").

You will not try to learn the hidden test split's labels other than by submitting predictions to this site.

Your acceptance is recorded with this version and the date; the curators may read and export that record."""


def areas_load(*, benchmark, with_baselines: bool = True, force: bool = False, seed: int = SEED) -> AreasReport:
    """Store the classification dataset (gold through the importer) and ensure its scored baselines."""
    examples = generate_areas(seed)
    lines: list[str] = []
    with transaction.atomic():
        dataset, created = areas_dataset_get_or_create(benchmark=benchmark)
        # Data terms, so that a fresh install shows them: its files and uploads ask for them once per account.
        # Only where the dataset has none: a curator's own version stays in force across restarts.
        if not DataTerms.objects.filter(dataset=dataset).exists():
            data_terms_publish(dataset=dataset, title=AREAS_TERMS_TITLE, text=AREAS_TERMS_TEXT)
        for split, hidden in SPLIT_HIDDEN.items():
            data = parse_classification(task="single", split=split, file=(f"{split}.jsonl", gold_jsonl(examples, split)),
                                        hidden=hidden)
            report = release_import(dataset=dataset, data=data, publish=True, only_new=True,
                                    note=f"demo generator, seed {seed}", keep_topics=True)
            lines.extend(report.lines()[2:])  # the split line and warnings (no corpus for classification)
    outcomes = areas_baselines_ensure(dataset=dataset, examples=examples, force=force, seed=seed) if with_baselines else []
    return AreasReport(dataset_created=created, import_lines=lines, baselines=outcomes)


def areas_baselines_ensure(*, dataset, examples: list[Example], force: bool = False, seed: int = SEED) -> list:
    """Upload and score each baseline's predictions on the test split, unless the same file is already scored.

    The same rules as the retrieval baselines (:func:`demo.uploads.baseline_store`).
    """
    split = Split.objects.select_related("dataset").get(dataset=dataset, name=BASELINE_SPLIT)
    files = area_predictions(examples, split=BASELINE_SPLIT, seed=seed)
    return [
        baseline_store(
            split=split,
            system_name=baseline.system_name,
            filename=f"demo-areas-{baseline.key}-{split.name}.jsonl",
            content=files[baseline.key],
            metadata={"description": baseline.description, "family": baseline.family,
                      "training_data": "train_split", "could_have_seen": "no"},
            key=baseline.key,
            force=force,
        )
        for baseline in AREA_BASELINES
    ]


def areas_export(*, directory, seed: int = SEED, with_predictions: bool = True) -> list[str]:
    """Write the classification task as the importer and ``python -m evaluation classify`` read it.

    ``classification/{train,test}.jsonl`` (id, text, label, language) and, with
    predictions, ``classification/predictions/<baseline>.test.jsonl``. No database.
    """
    root = Path(directory) / "classification"
    examples = generate_areas(seed)
    written = []
    files = {f"{split}.jsonl": gold_jsonl(examples, split) for split in SPLIT_HIDDEN}
    if with_predictions:
        for key, content in area_predictions(examples, split=BASELINE_SPLIT, seed=seed).items():
            files[f"predictions/{key}.{BASELINE_SPLIT}.jsonl"] = content
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
        written.append(str(path))
    return written
