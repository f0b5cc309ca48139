"""Vectors in sqlite-vec: storing, exact filtered search, deleting, migrating, the driver."""

from __future__ import annotations

import math
import os
import random
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Collection, Sequence
from pathlib import Path

import pytest

from memci.errors import ConfigError, MissingExtraError
from memci.memory import DocIndex, MessageIndex
from memci.messages import Message
from memci.store import SQLiteStore
from memci.store.sqlite._driver import ENV_SQLITE_DRIVER, _choose, connect, driver, errors
from memci.store.sqlite._migrations_memory import MEMORY_MIGRATIONS
from memci.store.sqlite._vectors import SQLiteVectorStore
from tests.test_retrieval import HashEmbedder

ROOT = Path(__file__).resolve().parents[1]
DIM = 12


class FixedEmbedder:
    """An embedder whose vectors the test gives directly (only its name and size matter)."""

    name = "test:fixed"

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [unit([float(len(t) % 7), 1.0] + [0.0] * (DIM - 2)) for t in texts]


def unit(vector: Sequence[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector]


def gaussian(rng: random.Random) -> list[float]:
    return unit([rng.gauss(0.0, 1.0) for _ in range(DIM)])


def brute_force(
    data: dict[int, tuple[list[float], int]], query: Sequence[float], k: int,
    sessions: Collection[int] | None = None, refs: Collection[int] | None = None,
) -> list[tuple[int, float]]:
    """The exact answer: every candidate scored by cosine, best first."""
    scored = [(ref, sum(a * b for a, b in zip(vec, query, strict=True)))
              for ref, (vec, sid) in data.items()
              if (sessions is None or sid in sessions) and (refs is None or ref in refs)]
    scored.sort(key=lambda t: (-t[1], t[0]))
    return scored[:k]


@pytest.fixture
def vectors(store: SQLiteStore) -> SQLiteVectorStore:
    return store.vectors(FixedEmbedder.name)


def fill(store: SQLiteStore, index: SQLiteVectorStore, kind: str, count: int,
         seed: int = 7) -> dict[int, tuple[list[float], int]]:
    rng = random.Random(seed)
    data = {ref: (gaussian(rng), rng.randint(1, 12)) for ref in range(1, count + 1)}
    index.add(kind, [(ref, sid) for ref, (_, sid) in data.items()],
              [vec for vec, _ in data.values()])
    return data


def assert_same(got: list[tuple[int, float]], want: list[tuple[int, float]]) -> None:
    assert [ref for ref, _ in got] == [ref for ref, _ in want]
    assert [score for _, score in got] == pytest.approx([s for _, s in want], abs=1e-5)


# -- the driver ---------------------------------------------------------------------------


def test_the_store_has_sqlite_vec_and_catches_the_drivers_errors(store: SQLiteStore) -> None:
    assert store.sqlite_vec
    assert sqlite3.Error in errors()
    assert driver().Error in errors()
    with store.read() as db:
        assert db.execute("SELECT vec_version()").fetchone()[0].startswith("v")
        with pytest.raises(errors()):
            db.execute("SELECT * FROM no_such_table")


def test_driver_setting_is_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_SQLITE_DRIVER, "sqlite3")
    assert _choose() == (sqlite3, True)
    monkeypatch.setenv(ENV_SQLITE_DRIVER, "postgres")
    with pytest.raises(ConfigError, match=ENV_SQLITE_DRIVER):
        _choose()
    monkeypatch.setitem(sys.modules, "pysqlite3.dbapi2", None)
    monkeypatch.setenv(ENV_SQLITE_DRIVER, "pysqlite3")
    with pytest.raises(MissingExtraError, match=r"memci\[vectors\]"):
        _choose()


# -- storing and searching ----------------------------------------------------------------


def test_round_trip_scores_are_cosines(store: SQLiteStore, vectors: SQLiteVectorStore) -> None:
    data = fill(store, vectors, "message", 40)
    assert vectors.count("message") == 40
    assert vectors.newest_ref("message") == 40
    assert vectors.count("item") == 0
    for ref, (vec, _) in list(data.items())[:5]:
        best = vectors.search("message", vec, 1)
        assert best[0][0] == ref
        assert best[0][1] == pytest.approx(1.0, abs=1e-6)
    assert vectors.search("item", data[1][0], 5) == []  # kinds are apart
    assert vectors.search("message", [0.0] * DIM, 5) == []  # no direction
    assert vectors.search("message", data[1][0], 0) == []
    assert vectors.backend == "sqlite-vec"


@pytest.mark.parametrize("k", [1, 7, 60, 5000])  # 5000: past vec0's largest k, a scan
def test_filters_give_the_exact_nearest(store: SQLiteStore, vectors: SQLiteVectorStore,
                                        k: int) -> None:
    data = fill(store, vectors, "chunk", 600)
    rng = random.Random(k)
    for _ in range(15):
        query = gaussian(rng)
        sessions = set(rng.sample(range(1, 13), rng.randint(1, 4)))
        refs = set(rng.sample(range(1, 601), rng.randint(1, 150)))
        assert_same(vectors.search("chunk", query, k), brute_force(data, query, k))
        assert_same(vectors.search("chunk", query, k, sessions=sessions),
                    brute_force(data, query, k, sessions=sessions))
        assert_same(vectors.search("chunk", query, k, refs=refs),
                    brute_force(data, query, k, refs=refs))
        assert_same(vectors.search("chunk", query, k, sessions=sessions, refs=refs),
                    brute_force(data, query, k, sessions=sessions, refs=refs))
    assert vectors.search("chunk", query, k, sessions=[]) == []
    assert vectors.search("chunk", query, k, refs=[]) == []
    assert vectors.search("chunk", query, k, sessions=[99]) == []


def test_many_refs_in_one_filter(store: SQLiteStore, vectors: SQLiteVectorStore) -> None:
    data = fill(store, vectors, "item", 3000)
    allowed = set(range(1, 3001, 2)) | {100_000 + i for i in range(40_000)}  # > 32766 vars
    query = gaussian(random.Random(3))
    assert_same(vectors.search("item", query, 20, refs=allowed),
                brute_force(data, query, 20, refs=allowed))


def test_delete_replace_and_missing(store: SQLiteStore, vectors: SQLiteVectorStore) -> None:
    data = fill(store, vectors, "item", 30)
    with store.write() as db:
        db.executemany("INSERT INTO memory_items (id, tenant, scope, kind, text, norm,"
                       " valid_from, created, updated, rev) VALUES (?, 't', 'tenant',"
                       " 'fact', 'x', 'x', 0, 0, 0, 0)", [(i,) for i in range(1, 33)])
        vectors.delete("item", [3, 4, 999])
    assert vectors.count("item") == 28
    assert vectors.missing("item", 10) == [3, 4, 31, 32]
    assert vectors.search("item", data[3][0], 1)[0][0] != 3
    flipped = [-x for x in data[5][0]]
    # A new vector for a ref replaces the old; the last one wins.
    vectors.add("item", [(5, 1), (3, 2), (3, 2)], [data[1][0], data[2][0], flipped])
    assert vectors.count("item") == 29
    assert vectors.missing("item", 10) == [4, 31, 32]
    best = vectors.search("item", flipped, 1)
    assert best[0][0] == 3 and best[0][1] == pytest.approx(1.0, abs=1e-6)
    assert vectors.search("item", data[5][0], 30)[-1][0] == 3
    assert {ref for ref, _ in vectors.search("item", data[1][0], 2)} == {1, 5}


def test_a_rolled_back_write_leaves_no_vector(store: SQLiteStore,
                                              vectors: SQLiteVectorStore) -> None:
    with pytest.raises(RuntimeError), store.atomic():
        vectors.add("message", [(1, 1)], [gaussian(random.Random(1))])
        raise RuntimeError("boom")
    assert vectors.space() is None
    data = fill(store, vectors, "message", 3)  # the space is made again, in a commit
    assert vectors.search("message", data[2][0], 1)[0][0] == 2


def test_a_vector_of_another_size_is_refused(store: SQLiteStore,
                                             vectors: SQLiteVectorStore) -> None:
    fill(store, vectors, "message", 3)
    with pytest.raises(ConfigError, match="test:fixed"):
        vectors.add("message", [(9, 1)], [[1.0, 0.0]])
    assert vectors.count("message") == 3


def test_vectors_survive_reopening(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    store = SQLiteStore(path)
    data = fill(store, store.vectors(FixedEmbedder.name), "message", 50)
    store.close()
    again = SQLiteStore(path)
    vectors = again.vectors(FixedEmbedder.name)
    query = gaussian(random.Random(11))
    assert vectors.count("message") == 50
    assert_same(vectors.search("message", query, 9, sessions={1, 2, 3}),
                brute_force(data, query, 9, sessions={1, 2, 3}))
    again.close()


# -- through the indexes ------------------------------------------------------------------


def add(store: SQLiteStore, index: MessageIndex, name: str,
        *texts: tuple[str, str]) -> list[Message]:
    rec = store.ensure_session("t", name, "u", {})
    stored = store.append(rec, [Message(role, Message.user(text).parts, tokens=1)
                                for role, text in texts])
    index.index(rec, stored)
    return stored


def test_dense_search_filtered_by_role_finds_the_nearest_that_pass(
    store: SQLiteStore,
) -> None:
    index = MessageIndex(store, embedder=HashEmbedder())
    rec = store.ensure_session("t", "roles", "u", {})
    add(store, index, "roles", *[("assistant", "kayak fjord paddle trip")] * 12,
        ("user", "kayak lessons"), ("user", "grocery list"), ("user", "fjord ferry times"))
    assert index.embed_pending() == 15
    found = index.dense("kayak fjord paddle", k=2, sessions=[rec.id], roles=["user"])
    assert [c.seq for c in found] == [13, 15]  # the 8 nearest are all assistant messages
    assert len(index.dense("kayak fjord paddle", k=3, sessions=[rec.id])) == 3
    assert index.stats().vectors == 15


def test_deleted_documents_lose_their_vectors(store: SQLiteStore, tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text("# Kayaks\n\nPaddling a kayak on the fjord.\n")
    (folder / "b.md").write_text("# Ferries\n\nFerry times for the fjord.\n")
    docs = DocIndex(store, embedder=HashEmbedder())
    docs.index_path(folder)
    assert docs.search_docs("kayak paddling")[0].path.endswith("a.md")
    with store.read() as db:
        assert db.execute("SELECT COUNT(*) FROM memory_vector_refs WHERE kind = 'chunk'"
                          ).fetchone()[0] == 2
    (folder / "a.md").unlink()
    DocIndex(store, embedder=None).index_path(folder)  # no embedder: vectors still go
    with store.read() as db:
        assert docs.vectors is not None
        assert docs.vectors.count("chunk") == 1
        table = f"memory_vec_{docs.vectors.space()}_chunk"
        assert db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] == 1
    assert all(h.path.endswith("b.md") for h in docs.search_docs("kayak paddling fjord"))


def test_migration_drops_the_blob_table_and_embeds_again(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    store = SQLiteStore(path)
    store.migrate("memory", MEMORY_MIGRATIONS[:1])  # a store from before sqlite-vec
    rec = store.ensure_session("t", "old", "u", {})
    store.append(rec, [Message.user("kayak trip on the fjord"), Message.user("grocery list")])
    with store.write() as db:
        db.execute("INSERT INTO memory_vector_spaces (id, embedder, dim, created)"
                   " VALUES (1, 'test:hash', 64, 0)")
        db.execute("INSERT INTO memory_vectors (space_id, kind, ref, session_id, vec)"
                   " VALUES (1, 'message', 1, ?, zeroblob(256))", (rec.id,))
    store.close()

    store = SQLiteStore(path)
    index = MessageIndex(store, embedder=HashEmbedder())
    assert store.schema_version("memory") == len(MEMORY_MIGRATIONS) >= 2
    with store.read() as db:
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master")}
        assert "memory_vectors" not in tables and "memory_vector_spaces" in tables
        assert db.execute("SELECT COUNT(*) FROM memory_vector_spaces").fetchone()[0] == 0
    hits = index.search("fjord kayak", sessions=[rec.id], retrievers=("dense",))
    assert hits[0].text == "kayak trip on the fjord"
    assert index.stats().vectors == 2
    store.close()


# -- the standard library's driver, which cannot load extensions here --------------------


def run_with_stdlib_driver(code: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, ENV_SQLITE_DRIVER: "sqlite3",
           "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    env.pop("MEMCI_EMBEDDER", None)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), str(tmp_path)],
                          env=env, capture_output=True, text=True, timeout=120, cwd=ROOT)


needs_no_extensions = pytest.mark.skipif(
    hasattr(sqlite3.Connection, "enable_load_extension"),
    reason="this Python's sqlite3 can load extensions: sqlite-vec works with it",
)


@needs_no_extensions
def test_an_embedder_without_sqlite_vec_fails_at_startup(tmp_path: Path) -> None:
    done = run_with_stdlib_driver("""
        import sys
        from memci.errors import MissingExtraError
        from memci.memory import Memory
        from memci.store import SQLiteStore
        from memci.store.sqlite._driver import driver
        from tests.test_retrieval import HashEmbedder

        store = SQLiteStore(sys.argv[1] + "/m.db")
        assert driver().__name__ == "sqlite3" and not store.sqlite_vec
        try:
            Memory(store, embedder=HashEmbedder())
        except MissingExtraError as exc:
            assert exc.extra == "vectors", exc
            print(exc)
        else:
            raise SystemExit("no error")
    """, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "pip install 'memci[vectors]'" in done.stdout
    assert f"{ENV_SQLITE_DRIVER}=sqlite3" in done.stdout


@needs_no_extensions
def test_the_store_works_without_sqlite_vec(tmp_path: Path) -> None:
    # A store that holds vectors, made with sqlite-vec, then used with no embedder.
    store = SQLiteStore(tmp_path / "m.db")
    index = MessageIndex(store, embedder=HashEmbedder())
    add(store, index, "s", ("user", "kayak trip on the fjord"), ("assistant", "nice"))
    assert index.search("kayak", retrievers=("dense",))
    store.close()
    done = run_with_stdlib_driver("""
        import sys
        import memci
        from memci.memory import DocIndex
        from memci.store.sqlite._driver import driver

        with memci.Engine.open(sys.argv[1] + "/m.db") as engine:
            assert driver().__name__ == "sqlite3" and not engine.store.sqlite_vec
            session = engine.session("s", tenant="t")
            session.add({"role": "user", "content": "which fjord was the kayak trip on?"})
            assert len(session.messages()) == 3
            hits = session.search("kayak")
            assert hits and all(h.retrievers == ("keyword",) for h in hits), hits
            session.build(budget=2000)
            docs = DocIndex(engine.store, embedder=None)
            (folder := __import__("pathlib").Path(sys.argv[1]) / "docs").mkdir()
            (folder / "a.md").write_text("# Title\\n\\nsome text about ferries\\n")
            docs.index_path(folder)
            assert docs.search_docs("ferries")
        print("ok")
    """, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
    with connect(tmp_path / "m.db") as db:  # the vectors made before are still there
        assert db.execute("SELECT COUNT(*) FROM memory_vector_refs").fetchone()[0] == 2
