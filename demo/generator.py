"""A seeded generator of the demo benchmark: a synthetic statute corpus and questions about it.

Why synthetic: the product must demonstrate itself on a fresh machine with no
download, and the real collections (BSARD, GreekBarRetrieval) are imported by
curators from their own releases. The demo mimics BSARD's shape — integer
article ids grouped in codes, French questions with a category and
subcategory, one to a dozen relevant articles each — and is built so that a
lexical retriever is good but not perfect:

* each question is planted in its relevant articles: one *main* article states
  all of the question's focus terms, the others only part of them (they are
  the ones a retriever misses first);
* questions paraphrase (a synonym instead of the article's term) and inflect
  differently (plural, infinitive), so stemming helps;
* questions carry a clause from another topic, and articles of the same
  subcategory share most of their words, so there are near-misses.

Everything flows from one :class:`random.Random` seeded by ``seed`` and from
ordered lists only (never set or dict-of-hash order), so the same seed gives
the same bytes in every process — :meth:`DemoData.sha256` is the check.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from functools import cached_property

from . import vocabulary

DEFAULT_SEED = 2024
N_ARTICLES = 2000
N_QUESTIONS = 200
SPLITS = ("dev", "test")
GENERAL_BOOK = "Dispositions générales"


# --- vocabulary -------------------------------------------------------------------


@dataclass(frozen=True)
class Term:
    """One vocabulary term: part of speech, inflected forms, gender, and a synonym's forms."""

    pos: str  # "N", "V" or "A"
    forms: tuple[str, ...]
    gender: str = "m"
    synonym: tuple[str, ...] | None = None
    person: bool = False

    @property
    def lemma(self) -> str:
        return self.forms[0]


def _parse_forms(text: str) -> tuple[tuple[str, ...], str]:
    forms = [f.strip() for f in text.split("/")]
    gender = "m"
    if forms[0].endswith("*f"):
        forms[0], gender = forms[0][:-2], "f"
    elif forms[0].startswith("la "):
        gender = "f"
    return tuple(forms), gender


def parse_terms(block: str) -> list[Term]:
    """Parse vocabulary lines (see :mod:`leaderboard.demo.vocabulary`) into terms."""
    terms = []
    for raw in block.strip().splitlines():
        pos, _, rest = raw.strip().partition(" ")
        person = pos == "P"
        pos = "N" if person else pos
        main, _, syn = rest.partition("|")
        forms, gender = _parse_forms(main)
        synonym = _parse_forms(syn)[0] if syn.strip() else None
        expected = 2 if pos == "N" else 4
        if pos not in ("N", "V", "A") or len(forms) != expected or (synonym and len(synonym) != expected):
            raise ValueError(f"demo vocabulary: bad line {raw.strip()!r}")
        terms.append(Term(pos, forms, gender, synonym, person))
    return terms


@dataclass(frozen=True)
class Subcategory:
    name: str
    terms: tuple[Term, ...]

    def of(self, pos: str) -> list[Term]:
        return [t for t in self.terms if t.pos == pos]


@dataclass(frozen=True)
class Topic:
    key: str
    category: str
    code: str
    weight: int
    common: tuple[Term, ...]
    subcategories: tuple[Subcategory, ...]


def load_topics() -> tuple[list[Topic], list[Term]]:
    """The topics and the generic legal terms, parsed from the vocabulary module."""
    topics = [
        Topic(
            key=t["key"],
            category=t["category"],
            code=t["code"],
            weight=t["weight"],
            common=tuple(parse_terms(t["common"])),
            subcategories=tuple(Subcategory(name, tuple(parse_terms(block))) for name, block in t["subcategories"].items()),
        )
        for t in vocabulary.TOPICS
    ]
    return topics, parse_terms(vocabulary.GENERIC)


# --- French-like surface forms ---------------------------------------------------


def _split_article(phrase: str) -> tuple[str, str]:
    for det in ("le ", "la ", "les ", "l'"):
        if phrase.startswith(det):
            return det.strip(), phrase[len(det) :]
    return "", phrase


def de(phrase: str) -> str:
    """'de' + a noun phrase with the French contractions (du, des, de la, de l')."""
    det, rest = _split_article(phrase)
    return {"le": "du " + rest, "les": "des " + rest, "la": "de la " + rest, "l'": "de l'" + rest}.get(det, "de " + rest)


def a(phrase: str) -> str:
    """'à' + a noun phrase (au, aux, à la, à l')."""
    det, rest = _split_article(phrase)
    return {"le": "au " + rest, "les": "aux " + rest, "la": "à la " + rest, "l'": "à l'" + rest}.get(det, "à " + rest)


def possessive(phrase: str) -> str:
    """'mon bailleur', 'ma caisse', 'mes enfants' — how a person asks about their own case."""
    det, rest = _split_article(phrase)
    if det == "les":
        return "mes " + rest
    if det == "la" and rest[:1] not in "aeéèêiouh":
        return "ma " + rest
    return "mon " + rest


def _capitalize(sentence: str) -> str:
    return sentence[:1].upper() + sentence[1:]


# --- the data ---------------------------------------------------------------------


@dataclass(frozen=True)
class Article:
    id: int
    code: str
    book: str
    reference: str
    text: str
    category: str


@dataclass(frozen=True)
class Question:
    id: int
    text: str
    category: str
    subcategory: str
    extra_description: str
    article_ids: tuple[int, ...]
    split: str


@dataclass(frozen=True)
class DemoData:
    """The generated benchmark. Ids are BSARD-like integers; as strings in qrels and runs."""

    seed: int
    articles: tuple[Article, ...]
    questions: tuple[Question, ...]

    def questions_of(self, split: str) -> list[Question]:
        return [q for q in self.questions if q.split == split]

    def qrels(self, split: str) -> dict[str, dict[str, int]]:
        """Binary judgments, as BSARD: every listed article has grade 1."""
        return {str(q.id): {str(a): 1 for a in q.article_ids} for q in self.questions_of(split)}

    def corpus_ids(self) -> list[str]:
        return [str(a.id) for a in self.articles]

    def to_bytes(self) -> bytes:
        """A canonical serialization: equal data, equal bytes."""
        payload = {
            "seed": self.seed,
            "articles": [asdict(a) for a in self.articles],
            "questions": [asdict(q) for q in self.questions],
        }
        return json.dumps(payload, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode()

    @cached_property
    def sha256(self) -> str:
        return hashlib.sha256(self.to_bytes()).hexdigest()


def _apportion(total: int, weights: list[int]) -> list[int]:
    """Split ``total`` proportionally to ``weights`` (largest remainder, ties by position)."""
    quotas = [total * w / sum(weights) for w in weights]
    counts = [int(q) for q in quotas]
    order = sorted(range(len(weights)), key=lambda i: (-(quotas[i] - counts[i]), i))
    for i in order[: total - sum(counts)]:
        counts[i] += 1
    return counts


class _Writer:
    """Builds sentences from terms with one random generator."""

    def __init__(self, rng: random.Random):
        self.rng = rng

    def noun(self, term: Term, *, plural: float = 0.25, synonym: float = 0.0) -> str:
        forms = term.synonym if term.synonym and self.rng.random() < synonym else term.forms
        return forms[1] if self.rng.random() < plural else forms[0]

    def verb(self, term: Term, which: int, *, synonym: float = 0.0) -> str:
        forms = term.synonym if term.synonym and self.rng.random() < synonym else term.forms
        return forms[which]

    def adj(self, term: Term, *, gender: str = "m", plural: bool = False) -> str:
        return term.forms[(1 if gender == "f" else 0) + (2 if plural else 0)]

    def article_sentence(self, nouns: list[Term], verbs: list[Term], adjs: list[Term]) -> str:
        """One sentence of statute prose from the article's words."""
        rng = self.rng
        n = [rng.choice(nouns) for _ in range(4)]
        v = rng.choice(verbs)
        ad = rng.choice(adjs)
        num = rng.choice(["huit", "quinze", "trente", "soixante", "nonante", "trois", "six"])
        template = rng.randrange(12)
        if template == 0:
            s = f"{self.noun(n[0], plural=0)} {self.verb(v, 1)} {self.noun(n[1])} dans un délai de {num} jours à compter {de(self.noun(n[2], plural=0))}."
        elif template == 1:
            s = f"sauf disposition contraire, {self.noun(n[0], plural=0)} ne peut {self.verb(v, 0)} {self.noun(n[1])} qu'avec l'accord {de(self.noun(n[2]))}."
        elif template == 2:
            s = f"lorsque {self.noun(n[0], plural=0)} est {self.adj(ad, gender=n[0].gender)}, {self.noun(n[1], plural=0)} {self.verb(v, 1)} {self.noun(n[2])}."
        elif template == 3:
            s = f"{self.noun(n[0], plural=1)} {self.verb(v, 2)} {self.noun(n[1])} conformément {a(self.noun(n[2]))}."
        elif template == 4:
            s = f"le juge peut, à la demande {de(self.noun(n[0]))}, {self.verb(v, 0)} {self.noun(n[1])}."
        elif template == 5:
            pp = self.verb(v, 3)
            s = f"{self.noun(n[0], plural=0)} {self.adj(ad, gender=n[0].gender)} est {pp} par {self.noun(n[1], plural=0)}."
        elif template == 6:
            s = f"le Roi détermine les modalités {de(self.noun(n[0]))} et {de(self.noun(n[1]))}."
        elif template == 7:
            s = f"à défaut {de(self.noun(n[0], plural=0))}, {self.noun(n[1], plural=0)} peut {self.verb(v, 0)} {self.noun(n[2])} devant {self.noun(n[3], plural=0)}."
        elif template == 8:
            s = f"par dérogation à l'alinéa {rng.randint(1, 4)}, {self.noun(n[0], plural=0)} {self.verb(v, 1)} {self.noun(n[1], plural=1)} {self.adj(ad, gender=n[1].gender, plural=True)}."
        elif template == 9:
            s = f"{self.noun(n[0], plural=0)} informe {self.noun(n[1], plural=0)} {de(self.noun(n[2]))} par lettre recommandée."
        elif template == 10:
            s = f"toute clause qui permet {a(self.noun(n[0], plural=0))} de {self.verb(v, 0)} {self.noun(n[1])} sans motif est réputée non écrite."
        else:
            s = f"{self.noun(n[0], plural=1)} {de(self.noun(n[1], plural=0))} sont tenus de {self.verb(v, 0)} {self.noun(n[2])} selon les conditions fixées par {self.noun(n[3], plural=0)}."
        return _elide(_capitalize(s))

    def planted_sentence(self, focus: list[Term], topic_noun: Term, *, synonym: float) -> str:
        """A sentence stating the given focus terms: what makes an article answer a question."""
        nouns = [t for t in focus if t.pos == "N"]
        others = [t for t in focus if t.pos != "N"]
        n0 = self.noun(nouns[0], plural=0.3, synonym=synonym) if nouns else self.noun(topic_noun, plural=0)
        n1 = self.noun(nouns[1], plural=0.3, synonym=synonym) if len(nouns) > 1 else self.noun(topic_noun)
        if others and others[0].pos == "V":
            v = others[0]
            template = self.rng.randrange(3)
            if template == 0:
                s = f"{n0} {self.verb(v, 1, synonym=synonym)} {n1} dans les conditions prévues au présent article."
            elif template == 1:
                s = f"{n0} ne peut être {self.verb(v, 3, synonym=synonym)} qu'en raison {de(n1)}."
            else:
                s = f"lorsque {n1} le justifie, il peut {self.verb(v, 0, synonym=synonym)} {n0}."
        elif others:
            s = f"{n0} {self.adj(others[0], gender=nouns[0].gender if nouns else 'm')} est opposable {a(n1)}."
        else:
            s = f"{n0} {'sont réglés' if _plural(n0) else 'est réglé'} selon les règles applicables {a(n1)}."
        return _elide(_capitalize(s))


def generate(seed: int = DEFAULT_SEED, *, n_articles: int = N_ARTICLES, n_questions: int = N_QUESTIONS) -> DemoData:
    """Generate the demo benchmark. Same seed, same bytes; a fraction of a second."""
    rng = random.Random(seed)
    w = _Writer(rng)
    topics, generic = load_topics()
    generic_nouns = [t for t in generic if t.pos == "N"]
    generic_verbs = [t for t in generic if t.pos == "V"]
    generic_adjs = [t for t in generic if t.pos == "A"]

    # 1. Articles, as lists of sentences (questions are planted into them below).
    sentences: list[list[str]] = []
    meta: list[tuple[Topic, str]] = []  # (topic, book) per article, by index
    by_sub: dict[tuple[str, str], list[int]] = {}
    per_topic = _apportion(n_articles, [t.weight for t in topics])
    code_start: dict[str, int] = {}
    for topic, count in zip(topics, per_topic, strict=True):
        code_start.setdefault(topic.code, len(sentences))
        n_general = max(1, count // 12)
        per_sub = _apportion(count - n_general, [1] * len(topic.subcategories))
        books: list[tuple[str, list[Term]]] = [(GENERAL_BOOK, [])]
        books += [(sub.name, list(sub.terms)) for sub in topic.subcategories]
        for (book, specific), n in zip(books, [n_general, *per_sub], strict=True):
            for _ in range(n):
                # An article speaks of a handful of its subcategory's terms, a few of
                # the topic's and the generic procedure words; now and then of
                # another topic (cross-references are what make retrieval hard).
                own = rng.sample(specific, k=min(len(specific), rng.randint(4, 7))) if specific else []
                common = rng.sample(list(topic.common), k=min(len(topic.common), 2))
                words = own + common + rng.sample(generic, k=3)
                if rng.random() < 0.15:
                    other = rng.choice([t for t in topics if t is not topic])
                    words += rng.sample(list(other.common), k=1)
                nouns = [t for t in words if t.pos == "N"] or generic_nouns
                verbs = [t for t in words if t.pos == "V"] or generic_verbs
                adjs = [t for t in words if t.pos == "A"] or generic_adjs
                sentences.append([w.article_sentence(nouns, verbs, adjs) for _ in range(rng.randint(2, 5))])
                meta.append((topic, book))
                by_sub.setdefault((topic.key, book), []).append(len(sentences) - 1)

    # 2. Questions, each planted in its relevant articles.
    q_topics = [topics[i] for i, c in enumerate(_apportion(n_questions, [t.weight for t in topics])) for _ in range(c)]
    rng.shuffle(q_topics)
    n_relevant_choices = [1] * 24 + [2] * 26 + [3] * 17 + [4] * 12 + [5] * 8 + [6] * 6 + [8, 9, 10, 12, 15, 7, 7]
    cities = ["Bruxelles", "Liège", "Namur", "Charleroi", "Mons", "Wavre", "Arlon", "Tournai", "Verviers", "Louvain-la-Neuve"]
    questions = []
    for qid, topic in enumerate(q_topics, start=1):
        sub = rng.choice(topic.subcategories)
        nouns, verbs, adjs = sub.of("N"), sub.of("V"), sub.of("A")
        focus = rng.sample(nouns, k=2) + [rng.choice(verbs if rng.random() < 0.75 else adjs)]
        pool = by_sub[(topic.key, sub.name)]
        k = min(rng.choice(n_relevant_choices), len(pool))
        relevant = [rng.choice(pool)]
        while len(relevant) < k:
            # As in BSARD, some answers sit in another part of the code or in another
            # code altogether (procedure, general provisions): the hard ones to find.
            draw = rng.random()
            if draw < 0.6:
                candidates: Sequence[int] = pool
            elif draw < 0.85:
                candidates = [i for key, ids in by_sub.items() if key[0] == topic.key for i in ids]
            else:
                candidates = range(len(sentences))
            pick = rng.choice(candidates)
            if pick not in relevant:
                relevant.append(pick)
        topic_noun = rng.choice([t for t in topic.common if t.pos == "N"])
        person = rng.choice([t for t in topic.common if t.person])
        main = relevant[0]
        for rank, idx in enumerate(relevant):
            where = rng.randint(0, len(sentences[idx]))
            if rank == 0:
                sentence = w.planted_sentence(focus, topic_noun, synonym=0.1)
            elif rng.random() < 0.15:
                # Relevant by reference only, as statutes often are: no focus word at all.
                main_topic = meta[main][0]
                number = main - code_start[main_topic.code] + 1
                sentence = f"L'article {number} du {main_topic.code} s'applique {a(w.noun(topic_noun, plural=0))}."
            else:
                part = rng.sample(focus, k=rng.choice([1, 1, 1, 2, 2, 3]))
                part.sort(key=focus.index)
                far = meta[idx][1] != sub.name
                sentence = w.planted_sentence(part, topic_noun, synonym=0.7 if far else 0.45)
            sentences[idx].insert(where, sentence)
        text = _question_text(w, focus, person, noise=_noise_terms(rng, topics, topic))
        # BSARD's extra_description: context the question itself leaves out.
        extra = rng.choice([
            f"J'habite à {rng.choice(cities)}.",
            "",
            f"Nous avons {rng.choice(['un enfant', 'deux enfants', 'trois enfants'])}.",
            "",
            "Je suis de nationalité belge.",
        ])
        article_ids = tuple(sorted(i + 1 for i in relevant))
        questions.append(Question(qid, text, topic.category, sub.name, extra, article_ids, ""))

    # 3. Splits: alternate within each category, so dev and test have the same mix;
    # the alternation runs on across categories, so the splits differ by at most one.
    ordered: list[int] = []
    for topic in topics:
        ids = [q.id for q in questions if q.category == topic.category]
        rng.shuffle(ids)
        ordered += ids
    split_of = {i: SPLITS[j % 2] for j, i in enumerate(ordered)}
    questions = [replace(q, split=split_of[q.id]) for q in questions]

    articles = []
    numbers: dict[str, int] = {}
    for i, (topic, book) in enumerate(meta):
        numbers[topic.code] = numbers.get(topic.code, 0) + 1
        n = numbers[topic.code]
        text = " ".join(sentences[i])
        if len(sentences[i]) > 3 and rng.random() < 0.4:
            text = "§ 1er. " + text
        articles.append(Article(i + 1, topic.code, book, f"Art. {n}, {topic.code}", text, topic.category))
    return DemoData(seed=seed, articles=tuple(articles), questions=tuple(questions))


def _noise_terms(rng: random.Random, topics: list[Topic], topic: Topic) -> list[Term]:
    """Words from another topic: real questions tell more of the story than the law needs."""
    if rng.random() < 0.45:
        return []
    other = rng.choice([t for t in topics if t is not topic])
    return [rng.choice([t for t in other.common if t.person])]


def _plural(phrase: str) -> bool:
    return phrase.startswith(("les ", "mes "))


def _elide(sentence: str) -> str:
    """de introduire → d'introduire, que il → qu'il: the elisions a French reader expects."""
    return re.sub(r"\b([dDnN]|[qQ]u)e ([aeéèêiouyâîôAEÉÈIOUY])", r"\1'\2", sentence)


def _question_text(w: _Writer, focus: list[Term], person: Term, *, noise: list[Term]) -> str:
    """A layperson's question: paraphrased and inflected, with a clause about something else."""
    rng = w.rng
    syn = 0.35
    n1, n2, third = focus
    a1 = w.noun(n1, plural=0.5, synonym=syn)
    a2 = w.noun(n2, plural=0.5, synonym=syn)
    said = w.noun(person, plural=0.2, synonym=0.4)
    gender = "f" if said.startswith("la ") or (said in person.forms and person.gender == "f") else "m"
    owner = possessive(said)
    many = _plural(owner)
    pronoun = ("elles" if many else "elle") if gender == "f" else ("ils" if many else "il")
    if third.pos == "V":
        inf, pp = w.verb(third, 0, synonym=syn), w.verb(third, 3, synonym=syn)
        template = rng.randrange(6)
        if template == 0:
            s = f"{owner} {'peuvent' if many else 'peut'}-{pronoun} {inf} {a1} en cas {de(a2)} ?"
        elif template == 1:
            s = f"que faire si {owner} {'refusent' if many else 'refuse'} de {inf} {a1} ?"
        elif template == 2:
            s = f"quelles sont les règles pour {inf} {a1} {de(a2)} ?"
        elif template == 3:
            s = f"{owner} m'{'ont' if many else 'a'} {pp} {a1}, est-ce légal compte tenu {de(a2)} ?"
        elif template == 4:
            s = f"dans quel délai faut-il {inf} {a1} après {a2} ?"
        else:
            s = f"je voudrais savoir qui doit {inf} {a1} et {a2}."
    else:
        adj = w.adj(third, gender=n1.gender, plural=_plural(a1))
        template = rng.randrange(3)
        if template == 0:
            s = f"{a1} {de(a2)} {'sont' if _plural(a1) else 'est'}-{'ils' if _plural(a1) else 'il'} {adj} si {owner} ne répond pas ?"
        elif template == 1:
            s = f"ai-je droit {a(a2)} si {a1} {'sont' if _plural(a1) else 'est'} {adj} ?"
        else:
            s = f"comment savoir si {a1} {de(a2)} {'sont' if _plural(a1) else 'est'} {adj} ?"
    if noise:
        x = possessive(noise[0].forms[0])
        clause = rng.choice(["Précision : cela touche aussi {x}.", "Cela concerne aussi {x}.", "Il y a aussi {x} dans ma situation."])
        s = s + " " + clause.format(x=x)
    return _elide(_capitalize(s))
