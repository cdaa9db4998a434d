"""Lexical search of memory lines: BM25 from the DB's own FTS5 index, within a cost budget.

Dense MiniLM vectors miss what plain word overlap finds in conversational memory (names, rare nouns,
dates); BM25 finds it. FTS5 scores every line that holds a query term, so a common term costs a scan
of its whole posting list: terms are taken rarest first while the lines they would score (estimated
for the searched scope) stay within ``postings``. The terms left out are the frequent ones, which
carry little BM25 weight anyway; a query whose rarest term alone is over budget adds no lexical hits.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections.abc import Sequence

from m3agent.memory.store import SQLiteStore

#: a scoped search also steps through whole posting lists to reach its id range: at most this many budgets
SEEK_BUDGETS = 5
_TAG = re.compile(r"<[a-z]+_\d+>")
_WORD = re.compile(r"[^\W_]+")
#: words too common to select anything (English; other languages rely on the budget alone)
STOPWORDS = frozenset(
    "a an and are as at be been being but by can could did do does doing for from had has have he her hers him his "
    "how i if in into is it its me my no nor not of on or our ours she so than that the their theirs them then there "
    "these they this those to too was we were what when where which while who whom whose why will with would you "
    "your yours".split()
)


def terms(text: str) -> list[str]:
    """The words of ``text`` as FTS5's ``unicode61 remove_diacritics 2`` tokenizer indexes them (case and
    accents folded, split at anything but letters and digits), memory tags and stopwords left out,
    each once."""
    text = _TAG.sub(" ", str(text))
    folded = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c)).casefold()
    return list(dict.fromkeys(w for w in _WORD.findall(folded) if w not in STOPWORDS))


def match_expression(words: Sequence[str]) -> str:
    """An FTS5 query matching any of ``words`` (single tokens, as :func:`terms` gives); each is quoted, so
    no word is read as query syntax."""
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in words)


class LexicalIndex:
    """BM25 over one DB's lines. Per-term document counts are cached until the DB changes (:meth:`clear`)."""

    def __init__(self, store: SQLiteStore, postings: int = 1000):
        self.store = store
        self.postings = postings
        self._documents: dict[str, int] = {}
        self._lock = threading.Lock()

    @property
    def available(self) -> bool:
        return self.store.has_lexical

    def clear(self) -> None:
        with self._lock:
            self._documents.clear()

    def documents(self, words: Sequence[str]) -> dict[str, int]:
        with self._lock:
            missing = [w for w in words if w not in self._documents]
        if missing:
            found = self.store.term_documents(missing)
            with self._lock:
                self._documents.update(found)
        with self._lock:
            return {w: self._documents.get(w, 0) for w in words}

    def choose(self, words: Sequence[str], share: float) -> list[str]:
        """Rarest first, the words whose lines in scope (``share`` of all lines) fit the budget; a
        scoped search also pays for stepping through whole posting lists, bounded at SEEK_BUDGETS budgets."""
        counts = self.documents(words)
        chosen, scored, skipped = [], 0.0, 0
        for word in sorted((w for w in words if counts[w] > 0), key=lambda w: (counts[w], w)):
            count = counts[word]
            if scored + count * share > self.postings or skipped + count > SEEK_BUDGETS * self.postings:
                break
            chosen.append(word)
            scored += count * share
            skipped += count
        return chosen

    def search(self, query: str, id_ranges: Sequence[tuple[int, int]] | None, share: float,
               limit: int) -> list[tuple[int, float]]:
        """``(node id, BM25)`` of the best lines, best first; ``id_ranges`` bounds the node ids searched and
        ``share`` is the part of all lines they hold (1.0 for the whole DB)."""
        if not self.available or limit <= 0:
            return []
        words = self.choose(terms(query), max(min(share, 1.0), 0.0))
        if not words:
            return []
        return self.store.lexical_search(match_expression(words), id_ranges, limit)
