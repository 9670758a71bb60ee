"""The bad-input corpus and what each file must get: for each file, the line named, the hint, the door that answers.

Every file under ``tests/data/bad/`` has one entry here (``test_corpus_is_complete``
holds the folder, this table and the README to each other). ``line`` is the
line the answer must name (``None``: a problem of the whole file, e.g. empty);
``hint`` is a substring of the metric core's reason that tells the person
what to do; ``web`` says where the web doors answer for a run: ``"cheap"``
(refused at upload, nothing written), ``"scoring"`` (accepted, then failed by
the scoring service with the line in its details; the file is kept, as every
accepted upload is) or ``"scored"``; ``web_hint`` is the substring the web
answer carries when it words things differently from the core.
"""

from __future__ import annotations

from dataclasses import dataclass

ACCEPTED = "ACCEPTED"
REFUSED = "REFUSED"


@dataclass(frozen=True)
class Case:
    path: str
    wrong: str
    outcome: str
    line: int | None = None
    hint: str = ""
    web: str = "cheap"
    web_hint: str = ""
    warning: str = ""
    needs_corpus: bool = False  # only scoring against the dataset's corpus sees it (id scheme)
    command_line_scores: bool = False  # refused by the core's TREC reader, converted and scored by the command line

    @property
    def accepted(self) -> bool:
        return self.outcome == ACCEPTED

    @property
    def id(self) -> str:
        return self.path.rsplit("/", 1)[-1]


def ok(path: str, wrong: str, *, warning: str = "") -> Case:
    return Case(path, wrong, ACCEPTED, web="scored", warning=warning)


def bad(path: str, wrong: str, line: int | None, hint: str, **kw) -> Case:
    return Case(path, wrong, REFUSED, line, hint, **kw)


COLUMNS = "expected 6 columns"
FINITE = "use a finite number"
UTF8 = "save the file as UTF-8"
RANK = "write 1, 2, 3"
NUMBER = "plain decimal number"

RUNS = [
    # What people commonly produce and is unambiguous: accepted.
    ok("runs/ok_plain.txt", "nothing (the reference run)"),
    ok("runs/ok_crlf.txt", "Windows line ends (CRLF)"),
    ok("runs/ok_bom.txt", "a UTF-8 byte-order mark before line 1"),
    ok("runs/ok_tabs.txt", "tabs between columns"),
    ok("runs/ok_trailing_spaces.txt", "spaces and tabs after the last column"),
    ok("runs/ok_bom_crlf_tabs_mixed.txt", "BOM, CRLF and runs of mixed spaces and tabs together"),
    ok("runs/ok_comments_blank_lines.txt", "# comment and blank lines between rows"),
    ok("runs/ok_no_final_newline.txt", "no newline after the last row"),
    ok("runs/ok_negative_rank.txt", "a negative rank (the rank column is read, never used: order is by score)"),
    ok("runs/ok_exponent_score.txt", "a score in exponent notation (1.2e1)"),
    ok("runs/ok_unknown_queries.txt", "a query the split does not have", warning="unknown_queries"),
    ok("runs/ok_gzip.txt.gz", "gzip-compressed"),
    ok("runs/ok_gzip_named_txt.txt", "gzip content under a .txt name (recognised by its magic bytes)"),
    ok("runs/ok_utf8_tag.txt", "non-ASCII UTF-8 in the run tag"),
    # Refused, naming the line.
    bad("runs/latin1_tag.txt", "Latin-1 é in the tag of line 3", 3, UTF8),
    bad("runs/latin1_late.txt", "Latin-1 é on line 80: the upload check reads every line", 80, UTF8),
    bad("runs/five_columns.txt", "line 2 has 5 columns (no tag)", 2, COLUMNS),
    ok("runs/seven_columns.txt", "line 3 has 7 columns (text after the tag is ignored, as trec_eval does)",
       warning="trailing_text"),
    ok("runs/tag_with_space.txt", "a run tag with a space (7 columns) on line 4 (its second word ignored, as "
       "trec_eval does)", warning="trailing_text"),
    bad("runs/nan_score.txt", "score nan on line 3", 3, "finite number"),
    bad("runs/nan_score_late.txt", "score NaN on line 80: the upload check reads every line", 80, "finite number"),
    bad("runs/inf_score.txt", "score inf on line 2", 2, FINITE),
    bad("runs/minus_inf_score.txt", "score -inf on line 5", 5, FINITE),
    bad("runs/overflow_score.txt", "score 1e400 (overflows a double) on line 2", 2, FINITE),
    bad("runs/float_rank.txt", "rank 2.5 on line 3", 3, RANK),
    bad("runs/word_rank.txt", "rank 'second' on line 2", 2, RANK),
    bad("runs/comma_decimal_score.txt", "score 0,5 with a decimal comma on line 2", 2, "0.5, not 0,5"),
    bad("runs/empty_score_column.txt", "an empty score (two spaces) on line 4", 4, COLUMNS),
    bad("runs/header_row.txt", "a header row 'qid Q0 docid rank score tag'", 1, NUMBER),
    bad("runs/duplicate_pair.txt", "(query 1, doc 12) on lines 1 and 4", 4, "keep one row per (query, document)",
        web="scoring"),
    bad("runs/duplicate_pair_far.txt", "(query 3, doc 101) on lines 6 and 66", 66, "keep one row per (query, document)",
        web="scoring"),
    bad("runs/qrels_as_run.txt", "a qrels file (4 columns) uploaded as a run", 1, COLUMNS),
    bad("runs/spreadsheet_export.csv", "a spreadsheet CSV export: header row, commas, CRLF", 1, "use spaces or tabs"),
    bad("runs/semicolon_separated.csv", "semicolon-separated with decimal commas", 1, "use spaces or tabs"),
    bad("runs/cr_only_line_ends.txt", "old Mac line ends (CR only): the whole file is one line", 1, COLUMNS),
    bad("runs/truncated_last_line.txt", "the last line is cut in the middle (an interrupted copy)", 7, COLUMNS),
    bad("runs/many_bad_lines.txt", "40 bad scores: the answer stops at 20 problems", 1, NUMBER),
    bad("runs/nbsp_separator.txt", "a no-break space (U+00A0) as a separator on line 2", 2,
        "separated by spaces or tabs"),
    bad("runs/unicode_minus_score.txt", "a Unicode minus sign (U+2212) in a score", 2, NUMBER),
    # Refused as a whole: not a run at all.
    bad("runs/empty.txt", "an empty file (0 bytes)", None, "one line per document", web_hint="empty"),
    bad("runs/only_blank_lines.txt", "only blank lines", None, "one line per document", web_hint="empty"),
    bad("runs/only_comments.txt", "only # comment lines", None, "one line per document"),
    bad("runs/binary_random.bin", "4 KB of random bytes", 1, "not UTF-8 text"),
    bad("runs/nul_bytes.txt", "a NUL byte inside line 3 (the binary check is file-wide and names line 1)", 1,
        "not UTF-8 text"),
    bad("runs/utf16.txt", "UTF-16 text (Windows 'Unicode')", 1, "UTF-16"),
    bad("runs/html_error_page.html", "an HTML login page saved instead of the run", 1, "HTML page"),
    # The core's TREC reader says it is JSON; the command line, the site and the API convert it on arrival.
    bad("runs/mteb_predictions.json", "MTEB's prediction JSON {qid: {docid: score}}", 1, "JSON", web="scored",
        command_line_scores=True),
    bad("runs/pdf.pdf", "a PDF document", 1, "PDF"),
    bad("runs/zip_instead_of_gzip.zip", "a zip archive (not gzip)", 1, "export plain text"),
    bad("runs/xls_ole.xls", "an old Excel .xls file", 1, "export plain text"),
    bad("runs/truncated.txt.gz", "a gzip file cut after 60 bytes", None, "compress the run again",
        web_hint="Compress it again"),
    bad("runs/gzip_of_garbage.gz", "gzip magic bytes followed by garbage", None, "compress the run again",
        web_hint="Compress it again"),
    bad("runs/gzip_empty.gz", "a valid gzip of an empty file", None, "one line per document", web_hint="empty"),
    # Well-formed, but the ids are another dataset's: only the dataset's corpus tells.
    bad("runs/docid_scheme_civc.txt", "GreekBarRetrieval ids (CivC::11) for a dataset with integer ids", None, "1234",
        needs_corpus=True, web_hint="ids like `1234`"),
    bad("runs/docid_scheme_prefixed.txt", "ids written doc12 instead of 12", None, "1234", needs_corpus=True,
        web_hint="ids like `1234`"),
]

QRELS_COLUMNS = "expected 4 columns"
GRADE = "grades are integers"

QRELS = [
    ok("qrels/ok_plain.qrels", "nothing (the reference qrels)"),
    ok("qrels/ok_crlf_bom_tabs.qrels", "BOM, CRLF and tabs"),
    ok("qrels/ok_negative_grade.qrels", "a negative grade (judged non-relevant, as trec_eval does)"),
    ok("qrels/ok_comments.qrels", "# comment and blank lines"),
    bad("qrels/run_as_qrels.txt", "a run (6 columns) given as qrels", 1, QRELS_COLUMNS),
    bad("qrels/three_columns_beir.tsv", "a BEIR qrels TSV (header, 3 columns) given as TREC qrels", 1, QRELS_COLUMNS),
    bad("qrels/five_columns.qrels", "5 columns on line 5", 5, QRELS_COLUMNS),
    bad("qrels/float_grade.qrels", "grade 0.5 on line 2", 2, GRADE),
    bad("qrels/nan_grade.qrels", "grade nan on line 3", 3, GRADE),
    bad("qrels/word_grade.qrels", "grade 'relevant' on line 4", 4, GRADE),
    bad("qrels/huge_grade.qrels", "a 20-digit grade (overflowed silently before)", 2, "small integers"),
    bad("qrels/duplicate_judgment.qrels", "(query 1, doc 12) judged on lines 1 and 8", 8, "keep one judgment"),
    bad("qrels/empty.qrels", "an empty file", None, "each line holds"),
    bad("qrels/only_comments.qrels", "only comments and blank lines", None, "each line holds"),
    bad("qrels/latin1.qrels", "a Latin-1 é in a docid on line 5", 5, UTF8),
    bad("qrels/binary.qrels", "2 KB of random bytes", 1, "not UTF-8 text"),
    bad("qrels/html.qrels", "an HTML error page", 1, "HTML page"),
]

#: Import files: (kind, case). kind says which argument of the TREC import the file is, or a release folder.
IMPORTS = [
    ("topics", ok("import/ok_topics.tsv", "nothing (reference topics, qid<TAB>text<TAB>category)")),
    ("topics", ok("import/ok_topics_bom_crlf.tsv", "BOM and CRLF")),
    ("corpus_ids", ok("import/ok_corpus_ids.txt", "nothing (reference corpus ids with a # comment)")),
    ("topics", bad("import/topics_latin1.tsv", "Latin-1 é on line 3", 3, "save the file as UTF-8")),
    ("topics", bad("import/topics_spaces_not_tabs.tsv", "spaces instead of a tab on line 2", 2, "qid<TAB>question")),
    ("topics", bad("import/topics_duplicate_qid.tsv", "query 2 again on line 5", 5, "ids must be unique")),
    ("topics", bad("import/topics_too_many_columns.tsv", "5 tab-separated columns on line 3", 3, "at most qid, text")),
    ("topics", bad("import/topics_empty.tsv", "only blank lines", None, "holds no topic")),
    ("topics", bad("import/topics_unclosed.sgml", "a <top> block never closed (line 6)", 6, "add </top>")),
    ("topics", bad("import/topics_binary.tsv", "1 KB of random bytes", 1, "save the file as UTF-8")),
    ("corpus_ids", bad("import/corpus_ids_duplicate.txt", "docid 2 again on line 4", 4, "ids must be unique")),
    ("corpus_ids", bad("import/corpus_ids_latin1.txt", "Latin-1 é on line 3", 3, "save the file as UTF-8")),
    ("corpus_ids", bad("import/corpus_broken.jsonl", "a corpus.jsonl line with broken JSON (line 2)", 2,
                       "one JSON object per line")),
    ("beir", bad("import/beir_bad_queries", "queries.jsonl line 2 is TSV, not JSON", 2, "one JSON object per line")),
    ("bsard", bad("import/bsard_missing_column", "questions_fr_train.csv lacks the article_ids column", 1,
                  "lacks the column")),
    ("zip", bad("import/not_a_zip.zip", "a text file named .zip (admin upload)", None, "is not a zip archive")),
]

#: Generated at test time by tests/data/bad/make_big.py (megabytes; never committed).
GENERATED = [
    ("million_queries.txt.gz", "1,000,000 rows, each for a different query",
     "ACCEPTED with an unknown_queries warning; REFUSED at line cap + 1 under LEXBOARD_MAX_RUN_LINES"),
    ("hundred_thousand_docs_one_query.txt.gz", "100,000 documents for one query",
     "ACCEPTED; rows beyond the depth (1000) cut with a depth_cut warning"),
    ("gzip_bomb.txt.gz", "165 KB of gzip that inflates to 64 MB",
     "REFUSED when the decompressed size passes LEXBOARD_MAX_DECOMPRESSED_BYTES, without inflating it all"),
    ("long_line.txt", "one 2 MB line", "REFUSED at line 1 (longer than 1 MB)"),
    ("zip_bomb.zip", "a zip whose qrels member inflates to 64 MB (admin import)",
     "REFUSED from the zip's directory: more than the limit"),
]
