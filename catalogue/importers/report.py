"""What an import did, for the command line and the admin page.

Counts only: a report never lists judgments, so it can be shown, logged and
pasted in an issue without revealing hidden labels. Query ids appear only as
examples for public splits.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lexboard.text import count


@dataclass
class SplitReport:
    name: str
    hidden: bool
    split_created: bool = False
    topics: int = 0
    topics_created: int = 0
    topics_updated: int = 0
    topics_kept: int = 0  # in the database but not in the files
    topics_given: bool = True  # False: the files held judgments only and the topics were not touched
    topic_notes: list[str] = field(default_factory=list)  # which fields the files changed or left as they were
    judgments: int = 0
    relevant: int = 0
    judged_topics: int = 0
    qrels_version: int | None = None
    qrels_created: bool = False
    published: bool = False
    current_version: int | None = None
    rescored: int = 0  # submissions queued again after a new version was published
    switch_pending: bool = False  # published, the leaderboard switches once the submissions are rescored
    warnings: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(
            self.split_created or self.topics_created or self.topics_updated or self.qrels_created or self.published
        )

    def line(self) -> str:
        state = "hidden" if self.hidden else "public"
        head = f"split {self.name} ({state}{', new' if self.split_created else ''}): "
        if not self.topics_given:
            t = f"topics not in these files ({self.topics_kept} kept as they were)"
        elif self.topics_created or self.topics_updated:
            t = f"{count(self.topics, 'topic')} ({self.topics_created} new, {self.topics_updated} updated)"
        else:
            t = f"{count(self.topics, 'topic')} (unchanged)"
        j = f"{count(self.judgments, 'judgment')} ({self.relevant} relevant) for {count(self.judged_topics, 'topic')}"
        if self.qrels_version is None:
            q = "no qrels"
        elif self.qrels_created and self.published:
            q = f"qrels v{self.qrels_version} added and published"
        elif self.qrels_created:
            q = (
                f"qrels v{self.qrels_version} added, NOT published (v{self.current_version} stays current; "
                "publish it in the admin or import again with --publish)"
            )
        elif self.published:
            q = f"qrels unchanged (v{self.qrels_version}), now published"
        else:
            current = ", current" if self.current_version == self.qrels_version else ""
            q = f"qrels unchanged (v{self.qrels_version}{current})"
        if self.rescored:
            q += f", {count(self.rescored, 'submission')} queued for rescoring"
        if self.switch_pending:
            q += f" (the leaderboard stays on v{self.current_version} until every one is rescored, then switches)"
        return head + "; ".join([t, j, q])


@dataclass
class ImportReport:
    dataset: str
    format: str
    dry_run: bool = False
    corpus_documents: int | None = None
    corpus_status: str = ""  # "new", "replaced", "unchanged" or "" (no corpus in the files)
    splits: list[SplitReport] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.corpus_status in ("new", "replaced") or any(s.changed for s in self.splits)

    @property
    def warnings(self) -> list[str]:
        return self.notices + [f"split {s.name}: {w}" for s in self.splits for w in s.warnings]

    def lines(self) -> list[str]:
        out = [f"{self.dataset}: {self.format} import" + (" (check only: nothing was written)" if self.dry_run else "")]
        if self.corpus_status:
            out.append(f"corpus: {count(self.corpus_documents or 0, 'document')} ({self.corpus_status})")
        else:
            out.append("corpus: not in these files (kept as it was)")
        for s in self.splits:
            out.append(s.line())
            out.extend(f"split {s.name}: {note}" for note in s.topic_notes)
        out.extend(f"warning: {w}" for w in self.warnings)
        if not self.changed:
            out.append("unchanged: these files were already imported; nothing was written")
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines())
