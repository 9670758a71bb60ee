"""BM25 over /input/corpus.jsonl for each topic of /input/topics.jsonl, written to /output/run.trec.

The standard library only, so the image needs nothing from the network: an
inverted index of lower-cased word tokens (title and text), Okapi BM25 with
k1 = 0.9 and b = 0.4 (Anserini's defaults), the top ``--depth`` documents per
topic, ties broken by document id so the same input gives the same bytes.
"""

import argparse
import heapq
import json
import math
import re
import sys
from collections import Counter, defaultdict

TOKEN = re.compile(r"\w+", re.UNICODE)
K1, B = 0.9, 0.4


def tokens(text):
    return TOKEN.findall(text.lower())


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--input", default="/input")
    parser.add_argument("--output", default="/output/run.trec")
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--tag", default="bm25-sandbox")
    args = parser.parse_args()

    postings = defaultdict(list)  # term -> [(doc index, term frequency)]
    lengths, ids = [], []
    with open(f"{args.input}/corpus.jsonl", encoding="utf-8") as corpus:
        for line in corpus:
            doc = json.loads(line)
            words = tokens(f"{doc.get('title', '')} {doc.get('text', '')}")
            index = len(ids)
            ids.append(str(doc["_id"]))
            lengths.append(len(words))
            for term, tf in Counter(words).items():
                postings[term].append((index, tf))
    if not ids:
        sys.exit("the corpus is empty: /input/corpus.jsonl has no documents")
    n_docs = len(ids)
    average = sum(lengths) / n_docs
    norms = [K1 * (1 - B + B * length / average) for length in lengths]

    written = 0
    with open(f"{args.input}/topics.jsonl", encoding="utf-8") as topics, open(args.output, "w") as run:
        for line in topics:
            topic = json.loads(line)
            scores = defaultdict(float)
            for term in set(tokens(topic.get("text", ""))):
                docs = postings.get(term)
                if not docs:
                    continue
                idf = math.log(1 + (n_docs - len(docs) + 0.5) / (len(docs) + 0.5))
                for index, tf in docs:
                    scores[index] += idf * tf * (K1 + 1) / (tf + norms[index])
            best = heapq.nsmallest(args.depth, scores.items(), key=lambda item: (-item[1], ids[item[0]]))
            for rank, (index, score) in enumerate(best, start=1):
                run.write(f"{topic['_id']} Q0 {ids[index]} {rank} {score:.6f} {args.tag}\n")
                written += 1
    print(f"{n_docs} documents, {written} lines written to {args.output}", file=sys.stderr)


if __name__ == "__main__":
    main()
