"""PostgreSQL ingest: what a batch of messages costs the database and memci's process.

Work is counted, never timed: the columns ``ANALYZE`` samples when an import settles its
keyword tables, and the statements and round trips of one ``add_many``. A store made
before these changes gets them when opened, and finds what it found.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

import psycopg
import pytest

import memci
from memci.memory import Kept, MemoryItems, MessageIndex, get_analyzer
from memci.messages import Message
from memci.store import ItemFilter, NewItem, Scope, SQLiteStore, open_store
from memci.store.postgres import PostgresStore
from memci.store.postgres._keyword import forget_keywords
from memci.text import BigramAnalyzer, _terms
from memci.text._terms import tokenizer
from tests import pg

WORDS = ("harbor lighthouse deploy build parser cache config painting lake museum "
         "杭州 西湖 旅游 明天 看看 博物馆 故宫 长城").split()
QUERIES = ["zeppelin", "harbor lighthouse", "杭州 旅游", "西湖", "message-42 harbor"]


@pytest.fixture
def url() -> str:
    return pg.fresh_database()


def _history(n: int, start: int = 0) -> list[dict[str, str]]:
    """``n`` messages of a few words each, different for every index."""
    return [{"role": "user" if i % 2 == 0 else "assistant",
             "content": f"message {i}: " + " ".join(WORDS[(i * 7 + j * 3) % len(WORDS)]
                                                    for j in range(1 + i % 5))
             + (" zeppelin" if i % 97 == 5 else "")}
            for i in range(start, start + n)]


def _sampled(url: str, table: str) -> list[str]:
    """The columns of ``table`` that hold statistics, in order."""
    with psycopg.connect(url, autocommit=True) as conn:
        return [str(r[0]) for r in conn.execute(
            "SELECT attname FROM pg_stats WHERE tablename = %s ORDER BY attname",
            (table,)).fetchall()]


def _searches(session: memci.Session) -> list[list[int | None]]:
    return [[h.message.seq for h in session.search(q, k=8)] for q in QUERIES]


def test_an_import_settles_its_doclists_by_their_key_only(url: str) -> None:
    # A doclist is read by its term and batch; ANALYZE also sampled its seven arrays
    # (each element's frequency), which made the import's settling 10x slower.
    with memci.Engine.open(url, workers=0) as engine:
        session = engine.session("s")
        for start in range(0, 1_200, 400):
            session.add_many(_history(400, start))
        found = _searches(session)
    assert _sampled(url, "memory_fts_bigram_postings") == ["batch", "term"]
    assert "ref" in _sampled(url, "memory_fts_bigram")  # the keyword rows were analyzed
    assert found[0] and found[-1]


def _long_chinese(n: int, start: int = 0) -> list[dict[str, str]]:
    """``n`` Chinese messages of about 150 characters (a keyword row of 2 to 8 kB)."""
    text = "".join(WORDS[10:]) * 8
    return [{"role": "user", "content": f"{i} {text[i % 7:]} {i}"}
            for i in range(start, start + n)]


def _compressed(url: str, refs_after: int = 0) -> list[str | None]:
    """How each keyword row's terms (``seq``) past ``refs_after`` are stored, distinct."""
    with psycopg.connect(url, autocommit=True) as conn:
        return [r[0] for r in conn.execute(
            "SELECT DISTINCT pg_column_compression(seq) FROM memory_fts_bigram"
            " WHERE ref > %s", (refs_after,)).fetchall()]


def test_a_long_keyword_row_goes_in_uncompressed(url: str) -> None:
    # A Chinese message's terms with its context's (past 2 kB) were compressed as they
    # went in: half of the keyword rows' insert, and a decompression for every read.
    with memci.Engine.open(url, workers=0) as engine:
        session = engine.session("s")
        session.add_many(_long_chinese(40))
        found = session.search("杭州西湖", k=3)
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT max(octet_length(seq::text))"
                           " FROM memory_fts_bigram").fetchone()
    # Rows past the size from which PostgreSQL compresses (2 kB), within a page.
    assert row is not None and 2_100 < int(row[0]) < 8_000, row
    assert _compressed(url) == [None]
    assert len(found) == 3


def _unsampled(conn: psycopg.Connection[Any], table: str) -> list[str]:
    return [str(r[0]) for r in conn.execute(
        "SELECT attname FROM pg_attribute WHERE attrelid = %s::regclass AND attnum > 0"
        " AND attstattarget = 0 ORDER BY attnum", (table,)).fetchall()]


def test_a_store_made_before_gets_its_doclists_sampled_by_key_when_opened(url: str) -> None:
    with memci.Engine.open(url, workers=0) as engine:
        session = engine.session("s")
        session.add_many(_history(600))
        before = _searches(session)
    # What memci before the postgres migration 5 left: every column sampled, long rows
    # compressed.
    with psycopg.connect(url, autocommit=True) as conn:
        arrays = _unsampled(conn, "memory_fts_bigram_postings")
        conn.execute("ALTER TABLE memory_fts_bigram_postings "
                     + ", ".join(f"ALTER COLUMN {c} SET STATISTICS -1" for c in arrays))
        conn.execute("ALTER TABLE memory_fts_bigram RESET (toast_tuple_target)")
        last = conn.execute("SELECT max(ref) FROM memory_fts_bigram").fetchone()
        conn.execute("DELETE FROM memci_migrations WHERE component = 'postgres'"
                     " AND version = 5")
        assert _unsampled(conn, "memory_fts_bigram_postings") == []
    with memci.Engine.open(url, workers=0) as engine:
        session = engine.session("s")
        after = _searches(session)
        session.add({"role": "user", "content": "a dirigible this time"})
        newest = session.search("dirigible", k=1)
        session.add_many(_long_chinese(10))
    with psycopg.connect(url, autocommit=True) as conn:
        upgraded = _unsampled(conn, "memory_fts_bigram_postings")
    assert arrays == ["refs", "shards", "tokens", "a", "b", "c", "d"]
    assert upgraded == arrays
    assert last is not None and _compressed(url, int(last[0])) == [None]
    assert after == before and before[0]
    assert newest and newest[0].message.content == "a dirigible this time"


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The text of every statement psycopg sends for this thread from now on."""
    texts: list[str] = []
    thread = threading.get_ident()
    execute = psycopg.Cursor.execute

    def recorded(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        if pg.on_behalf_of(thread):
            texts.append(query.decode() if isinstance(query, bytes) else str(query))
        return execute(self, query, *args, **kwargs)

    monkeypatch.setattr(psycopg.Cursor, "execute", recorded)
    return texts


def test_a_batch_of_any_size_is_sent_as_the_same_statements(url: str, sent: list[str]) -> None:
    # A multi-row VALUES of 100 messages (900 parameters) was a new statement text for
    # each batch size: psycopg split it anew each time (more of memci's time than the
    # rows' insert) and the server parsed and planned it again.
    with memci.Engine.open(url, workers=0) as engine:
        session = engine.session("s")
        session.add_many(_history(30))
        sizes = {}
        for start, n in ((30, 40), (70, 100), (170, 7)):
            sent.clear()
            session.add_many(_history(n, start))
            sizes[n] = {t for t in sent if t.startswith("INSERT")}
        found = session.search("zeppelin", k=3)
    assert sizes[40] == sizes[100] == sizes[7], sizes
    assert {t.split(" (")[0] for t in sizes[100]} >= {"INSERT INTO messages",
                                                      "INSERT INTO memory_docs"}
    assert sorted(h.message.seq for h in found[:2]) == [6, 103]  # the two with zeppelin


def _items(n: int, start: int) -> list[NewItem]:
    """``n`` archived pages as memory items (one with a rare word every 97)."""
    scope = Scope.user_scope("u", "t")
    return [NewItem(scope, "episodic", f"page {i}", text, f"{i} {text}", None, f"s#p{i}", i,
                    float(i), float(i) + 0.5)
            for i in range(start, start + n)
            for text in [" ".join(m["content"] for m in _history(2, 2 * i))]]


def test_a_batch_of_memory_items_of_any_size_is_sent_as_the_same_statement(
    url: str, sent: list[str],
) -> None:
    # An archive event keeps hundreds of pages as items at once: their multi-row VALUES
    # (15 parameters an item) was a new text for each batch size, split by psycopg and
    # parsed by the server anew (most of an import's archive event in psycopg).
    store = open_store(url)
    try:
        items = store.items(get_analyzer("bigram"))
        texts: dict[int, set[str]] = {}
        ids: list[int] = []
        for start, n in ((0, 3), (3, 40), (43, 300), (343, 7)):
            sent.clear()
            ids += items.add_many(_items(n, start))
            texts[n] = {t for t in sent if t.startswith("INSERT INTO memory_items ")}
        found = items.keyword(get_analyzer("bigram").query("zeppelin"),
                              ItemFilter(Scope.user_scope("u", "t")), 50)
        kept = items.get_many(ids)
    finally:
        store.close()
    assert texts[3] == texts[40] == texts[300] == texts[7] and len(texts[3]) == 1, texts
    assert [item.page for item in kept] == list(range(350))  # ids in the items' order
    assert [(item.source, item.valid_from.timestamp(), item.created.timestamp())
            for item in kept[:2]] == [("s#p0", 0.0, 0.5), ("s#p1", 1.0, 1.5)]
    with psycopg.connect(url, autocommit=True) as conn:
        revisions = conn.execute("SELECT count(DISTINCT rev) FROM memory_items").fetchone()
    assert revisions == (350,)  # a revision each, from the sequence
    assert sorted(item.page or 0 for item in items_found(kept, found)) == [
        i for i in range(350) if (2 * i) % 97 == 5 or (2 * i + 1) % 97 == 5]


def items_found(kept: list[Any], found: list[int]) -> list[Any]:
    """The items of ``kept`` whose ids are ``found``."""
    wanted = set(found)
    return [item for item in kept if item.id in wanted]


def test_a_batch_of_messages_counts_its_keyword_rows_as_it_writes_them(
    url: str, sent: list[str],
) -> None:
    # The keyword rows' insert and their statistics (rows and terms per session) were
    # two statements, two round trips: now one, whatever the batch's sessions.
    with memci.Engine.open(url, workers=0) as engine:
        session = engine.session("s")
        session.add_many(_history(100))
        sent.clear()
        session.add_many(_history(100, 100))
        statements = list(sent)
        other = engine.session("other")
        other.add_many(_history(10, 500))
        found = session.search("zeppelin", k=5)
    assert len(statements) <= 9, statements
    assert not [t for t in statements if t.startswith("INSERT INTO keyword_stats")]
    with psycopg.connect(url, autocommit=True) as conn:
        counts = conn.execute("SELECT shard, docs FROM keyword_stats"
                              " WHERE tab = 'memory_fts_bigram' ORDER BY shard").fetchall()
    assert [docs for _, docs in counts] == [200, 10]  # each session's rows counted
    assert sorted(h.message.seq for h in found[:2]) == [6, 103]


def test_a_batch_sent_as_one_parameter_keeps_every_value_and_refuses_nul(url: str) -> None:
    # The batch travels as JSON read into the table's row type: text with quotes,
    # backslashes, control characters and any script comes back as written; a NUL (which
    # PostgreSQL's text refuses) is the typed error it was, and nothing is stored.
    odd = 'café "quoted" \\ back\\slash\n\ttab 杭州 \u2028 {"a": 1} ?? %s'
    with memci.Engine.open(url, workers=0) as engine:
        session = engine.session("s")
        with pytest.raises(memci.InvalidTextError):
            session.add_many([{"role": "user", "content": "a", "name": "x\x00y"},
                              {"role": "user", "content": "b"}])
        assert session.messages() == []
        session.add_many([{"role": "user", "content": odd, "name": "né"},
                          {"role": "assistant", "content": odd[::-1],
                           "metadata": {"k": [1, 2.5, None]}}])
        stored = [(m.content, m.name, dict(m.metadata)) for m in session.messages()]
        found = session.search("quoted tab", k=1)
    assert stored == [(odd, "né", {}), (odd[::-1], None, {"k": [1, 2.5, None]})]
    assert found and found[0].message.seq == 1


def _chat(n: int, start: int = 0) -> list[dict[str, str]]:
    """``n`` short Chinese and English turns, some of several lines (a blank one too)."""
    places = ("杭州西湖", "北京故宫", "长城", "苏州园林", "黄山")
    return [{"role": "user" if i % 2 == 0 else "assistant",
             "content": f"我们第{i}天去{places[i % 5]}看看吧，门票多少钱？"
             + ("\n\nthe café opens at nine\n天气不错" if i % 3 == 0 else " ok")}
            for i in range(start, start + n)]


def test_a_batch_documents_each_line_of_its_contexts_once(
    url: str, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A message's context is the tail of the messages before it (300 characters): each
    # message's text was documented by the analyzer and cut into terms again in the
    # context of each message after it, most of a Chinese batch's own Python.
    documented: list[int] = []
    document = BigramAnalyzer.document

    def counted(self: BigramAnalyzer, text: str) -> str:
        documented.append(len(text))
        return document(self, text)

    with memci.Engine.open(url, workers=0) as engine:
        session = engine.session("s")
        session.add_many(_chat(100))
        batch = _chat(100, 100)
        monkeypatch.setattr(BigramAnalyzer, "document", counted)
        session.add_many(batch)
        monkeypatch.undo()
        found = session.search("苏州园林", k=3)
    written = sum(len(m["content"]) for m in batch)
    # The batch's own text, and the start of the first lines its contexts cut in two.
    assert sum(documented) <= 1.5 * written, (sum(documented), written)
    assert len(found) == 3 and all("苏州园林" in h.message.content for h in found)


def _terms_of(spec: str, db: sqlite3.Connection, table: str) -> dict[int, list[str | None]]:
    """Each SQLite entry's terms as a PostgreSQL keyword row keeps them: by seq.

    Its text and its context as SQLite's FTS5 table keeps them (the analyzer's documents
    of each whole), cut by the PostgreSQL store's tokenizer, a NULL between them.
    """
    cut = tokenizer(spec)
    return {int(seq): [*cut(body), None, *cut(context)] for seq, body, context in db.execute(
        f"SELECT d.seq, f.body, f.context FROM {table} f"
        " JOIN memory_docs d ON d.id = f.rowid").fetchall()}


@pytest.mark.parametrize("analyzer", ["bigram", "jieba"])
def test_a_batch_cut_by_lines_keeps_the_terms_of_whole_texts(
    url: str, tmp_path: Path, analyzer: str,
) -> None:
    # Lines are documented and cut once a batch: a text's terms must be what the whole
    # text's document cuts into, as SQLite's FTS5 table gets it.
    if analyzer == "jieba":
        pytest.importorskip("jieba", reason="the jieba extra (memci[jieba]) is not installed")
    texts = [m["content"] for m in _chat(120)] + [
        "a\u0301b line\n\u0301 mark first\n杭州\n\n", "\n", "résumé naïve\r\nnext 西湖。"]
    kept: list[dict[int, list[str | None]]] = []
    for store in (SQLiteStore(tmp_path / "lite.db"), PostgresStore(url)):
        record = store.ensure_session("t", "s", "u", {})
        index = MessageIndex(store, analyzer=analyzer, embedder=None)
        stored = store.append(record, [Message.user(t) for t in texts])
        index.index(record, stored)
        if isinstance(store, SQLiteStore):
            with sqlite3.connect(tmp_path / "lite.db") as db:
                kept.append(_terms_of(index.analyzer.tokenize, db, f"memory_fts_{analyzer}"))
        else:
            with psycopg.connect(url, autocommit=True) as conn:
                kept.append({int(seq): list(terms) for seq, terms in conn.execute(
                    f"SELECT d.seq, k.seq FROM memory_fts_{analyzer} k"
                    " JOIN memory_docs d ON d.id = k.ref").fetchall()})
        store.close()
    assert len(kept[1]) == len(texts)
    assert kept[1] == kept[0]


def _kept_again(store: Any, sent: list[str] | None) -> tuple[list[tuple[Any, ...]], list[int]]:
    """Pages archived twice (the second time with summaries): their items, what the
    summaries' word finds, and (in ``sent``) the statements of the second time only."""
    items = MemoryItems(store, analyzer="bigram", embedder=None, clock=lambda: 1000.0)
    session = store.ensure_session("t", "s", "u", {})
    pages = [(n, f"user: page {n} about {WORDS[n % len(WORDS)]}", None) for n in range(60)]
    items.remember_pages(session, pages)
    if sent is not None:
        sent.clear()
    items.remember_pages(session, [(n, text, f"zeppelin {n}" if n % 2 else None)
                                   for n, text, _ in pages])
    scope = Scope.of(session)
    kept = sorted((i.page, i.text, i.summary, i.seen, i.current, i.updated.timestamp())
                  for i in items.items(scope, current=False))
    found = items.rows.keyword(get_analyzer("bigram").query("zeppelin"), ItemFilter(scope), 100)
    return kept, sorted(item.page or 0 for item in items.rows.get_many(found))


def test_pages_kept_again_are_counted_in_one_statement_whatever_their_number(
    url: str, sent: list[str], tmp_path: Path,
) -> None:
    # An archive event meets again the pages it kept before (234 in an English import):
    # each was counted by an UPDATE of its own, a round trip each, and each given a
    # summary had its keyword row replaced by two statements more.
    store = open_store(url)
    try:
        kept, found = _kept_again(store, sent)
        statements = list(sent)
    finally:
        store.close()
    lite = SQLiteStore(tmp_path / "lite.db")
    try:
        assert (kept, found) == _kept_again(lite, None)  # what SQLite keeps and finds
    finally:
        lite.close()
    assert len(statements) <= 12, statements
    assert [t for t in statements if t.startswith("UPDATE memory_items i SET seen")], statements
    assert [row[3] for row in kept] == [2] * 60  # each page seen twice
    assert found == list(range(1, 60, 2))  # the new summaries are searched


def _summarized_again(store: Any) -> dict[str, list[int]]:
    """Pages kept, then some of them given a summary, twice: the pages each word finds."""
    items = MemoryItems(store, analyzer="bigram", embedder=None, clock=lambda: 1000.0)
    session = store.ensure_session("t", "s", "u", {})
    pages = [(n, f"user: page {n} about {WORDS[n % 12]}", None) for n in range(20)]
    items.remember_pages(session, pages)
    items.remember_pages(session, [(0, pages[0][1], "zeppelin first"),
                                   (5, pages[5][1], "zeppelin fifth")])
    items.remember_pages(session, [(0, pages[0][1], "airship again"),
                                   (7, pages[7][1], "airship seventh")])
    scope = Scope.of(session)
    found = {}
    for word in ("zeppelin", "airship", "page", "lighthouse"):
        ids = items.rows.keyword(get_analyzer("bigram").query(word), ItemFilter(scope), 100)
        found[word] = sorted(item.page or 0 for item in items.rows.get_many(ids))
    return found


def test_the_first_row_of_a_batch_indexed_again_keeps_the_batch_of_the_others(
    url: str, tmp_path: Path,
) -> None:
    # A batch of keyword rows is keyed by its first row's ref. Given a summary, that row
    # was deleted and indexed again under the same key, which the batch's other rows
    # still held: "duplicate key" (a chat's build on PostgreSQL failed at an archive
    # event that summarized a page kept before).
    store = open_store(url)
    try:
        found = _summarized_again(store)
    finally:
        store.close()
    lite = SQLiteStore(tmp_path / "lite.db")
    try:
        assert found == _summarized_again(lite)  # what SQLite finds
    finally:
        lite.close()
    assert found["zeppelin"] == [5] and found["airship"] == [0, 7]
    assert found["page"] == list(range(20))


def _kept_repeated(store: Any, at_once: bool) -> list[tuple[Any, ...]]:
    """Facts met up to three times in one batch (each time from another page), kept at
    once or one after another: the items kept."""
    items = MemoryItems(store, analyzer="bigram", embedder=None, clock=lambda: 1000.0)
    scope = Scope.user_scope("u", "t")
    entries = [Kept(f"likes {WORDS[n % 20 % 12]} number {n % 20}", source=f"s#p{n}")
               for n in range(50)]
    if at_once:
        items.remember_many(scope, "fact", entries)
    else:
        for e in entries:
            items.remember(scope, e.text, "fact", source=e.source)
    return sorted((i.text, i.source, i.seen, i.current)
                  for i in items.items(scope, current=False))


def test_texts_met_again_in_one_batch_are_merged_in_a_few_statements(
    url: str, sent: list[str], tmp_path: Path,
) -> None:
    # A text met again in an archive event's batch was remembered on its own after the
    # batch: a find, a merge and a read, one round trip each, for each of them.
    store = open_store(url)
    try:
        sent.clear()
        kept = _kept_repeated(store, True)
        statements = [t for t in sent if "memory_items" in t]
    finally:
        store.close()
    lite = SQLiteStore(tmp_path / "lite.db")
    try:
        assert kept == _kept_repeated(lite, False)  # as remembering them one by one
    finally:
        lite.close()
    assert len(statements) <= 20, statements
    assert sorted(seen for *_, seen, _ in kept) == [2] * 10 + [3] * 10


def _short_turns(n: int, start: int = 0) -> list[dict[str, str]]:
    """``n`` short Chinese turns (8 of them never fill a context of 300 characters)."""
    return [{"role": "user" if i % 2 == 0 else "assistant",
             "content": f"第{i}句 " + WORDS[10 + i % 8] + WORDS[10 + (i * 3) % 8]}
            for i in range(start, start + n)]


def _reads_before(statements: list[str]) -> list[str]:
    """The statements that read the index's entries or the log before a batch."""
    return [t for t in statements if t.startswith("SELECT") and (
        "FROM memory_docs WHERE session_id" in t or "seq < %s AND role <> 'system'" in t)]


def _keyword_rows(url: str, session: str) -> list[tuple[Any, ...]]:
    """``(seq, page, terms)`` of every message of ``session``: its entry and keyword row."""
    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute(
            "SELECT d.seq, d.page, k.seq FROM memory_docs d JOIN sessions s"
            " ON s.id = d.session_id JOIN memory_fts_bigram k ON k.ref = d.id"
            " WHERE s.name = %s ORDER BY d.seq", (session,)).fetchall()


def test_a_batch_reads_the_page_and_context_before_it_in_one_statement(
    url: str, sent: list[str],
) -> None:
    # Indexing a batch read the page of the message before it, then its context: the
    # newest 8 messages, and 32 more when short turns left the context unfilled (every
    # Chinese batch): three statements, three round trips of the batch's write. Two
    # processes take turns here, so each batch follows the other's and reads it back.
    with memci.Engine.open(url, workers=0) as engine, \
            memci.Engine.open(url, workers=0) as other:
        engine.session("batched").add_many(_short_turns(100))
        reads = []
        for start, writer in ((100, other), (200, engine), (300, other), (400, engine)):
            sent.clear()
            writer.session("batched").add_many(_short_turns(100, start))
            reads.append(_reads_before(sent))
        # After its own batch, a process reads nothing back: it kept where it ended.
        sent.clear()
        engine.session("batched").add_many(_short_turns(100, 500))
        reads.append(_reads_before(sent))
        one_by_one = engine.session("one_by_one")
        for message in _short_turns(600):
            one_by_one.add(message)
    # The first batch of each process that finds 8 too few learns it (a read of 32
    # more); later, one.
    assert [len(r) for r in reads] == [2, 2, 1, 1, 0], reads
    # The same pages and contexts as messages indexed one at a time.
    assert _keyword_rows(url, "batched") == _keyword_rows(url, "one_by_one")


def test_keyword_rows_forgotten_in_many_shards_are_counted_out_in_one_statement(
    url: str, sent: list[str],
) -> None:
    # Each shard's statistics were counted out by a statement of their own: a round trip
    # per session of the rows a deletion forgot.
    with memci.Engine.open(url, workers=0) as engine:
        for name in ("a", "b", "c", "d"):
            engine.session(name).add_many(_history(20))
    with psycopg.connect(url, autocommit=True) as conn:
        refs = [int(r[0]) for r in conn.execute(
            "SELECT ref FROM memory_fts_bigram WHERE ref % 2 = 0").fetchall()]
        sent.clear()
        with conn.transaction():
            forgotten = forget_keywords(conn, "memory_fts_bigram", refs)
        statements = list(sent)
        stats = conn.execute(
            "SELECT shard, docs, tokens FROM keyword_stats WHERE tab = 'memory_fts_bigram'"
            " ORDER BY shard").fetchall()
        left = conn.execute("SELECT shard, count(*), sum(tokens) FROM memory_fts_bigram"
                            " GROUP BY shard ORDER BY shard").fetchall()
    assert forgotten == len(refs) == 40
    assert len(statements) == 2, statements  # the rows and doclists, then the counts
    assert [tuple(map(int, row)) for row in stats] == [tuple(map(int, row)) for row in left]


def test_chinese_terms_are_kept_without_the_stemmer_steps(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A CJK bigram went through every step of the Porter stemmer (most of a Chinese
    # text's terms, each new one a miss of the stemmer's cache), to come out unchanged.
    steps: list[bytes] = []
    step = _terms._step

    def counted(word: bytes, rules: Any) -> bytes:
        steps.append(word)
        return step(word, rules)

    monkeypatch.setattr(_terms, "_step", counted)
    # Characters no other test cuts: none is in the stemmer's cache yet.
    text = BigramAnalyzer().document("鬯鬲鬻鼋鼍 龠龡龢龣 consoles 鬯鬲ing")
    cut = _terms.terms(_terms.PORTER, text)
    fts5 = sqlite3.connect(":memory:")
    fts5.execute(f"CREATE VIRTUAL TABLE t USING fts5(x, tokenize = '{_terms.PORTER}')")
    fts5.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
    fts5.execute("INSERT INTO t (x) VALUES (?)", (text,))
    assert cut == [r[0] for r in fts5.execute("SELECT term FROM v ORDER BY offset")]
    assert steps and all(word.isascii() for word in steps), steps  # "consoles" alone
