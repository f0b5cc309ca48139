"""The SQLite keyword search of memory items reads what it ranks, not every item.

The work is counted in SQLite's virtual machine steps (a progress handler), never timed:
a word thousands of items hold (archived pages at 100k messages) costs a search about
the same in a store twice as large, and a rare word costs the same however many items
its owner has, and a word held by most of a store's items (however few past ``SMALL``) is
not ranked item by item. A store of at most ``SMALL`` items ranks exactly as BM25 over
every term.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from memci.store import SQLiteStore
from memci.store._items import ItemFilter, NewItem, Scope
from memci.store._search import RARE
from memci.store.sqlite._items import SMALL, SQLiteItemStore
from memci.text import get_analyzer

from .conftest import sqlite_steps

_BATCH = 500


def _items(store: SQLiteStore) -> SQLiteItemStore:
    return store.items(get_analyzer("bigram"))


def _add(items: SQLiteItemStore, scope: Scope, texts: Sequence[str], start: float = 0.0
         ) -> list[int]:
    """Items of ``texts`` owned by ``scope`` (one second apart from ``start``); their ids."""
    ids: list[int] = []
    for at in range(0, len(texts), _BATCH):
        ids += items.add_many([
            NewItem(scope, "episodic", None, text, f"{start + at + i}:{text}", None, None,
                    None, start + at + i, start + at + i)
            for i, text in enumerate(texts[at:at + _BATCH])])
    return ids


def _search(store: SQLiteStore, query: str, scope: Scope, depth: int = 50
            ) -> tuple[list[int], int]:
    """The ids ``query`` finds in ``scope``, and the steps of a second search (warm)."""
    items = _items(store)
    where = ItemFilter(scope)
    plan = get_analyzer("bigram").query(query)
    items.keyword(plan, where, depth)
    with sqlite_steps(store) as steps:
        found = items.keyword(plan, where, depth)
    return found, steps[0]


def _harbor(path: Path, n: int) -> tuple[SQLiteStore, Scope, list[int]]:
    """``n`` items saying "harbor" (a word every item holds), 5 of them "lantern" too."""
    store = SQLiteStore(path)
    scope = Scope.user_scope("alice", tenant="acme")
    texts = [f"the harbor crane number {i}" for i in range(n)]
    for i in range(5):
        texts[i * (n // 5)] += " and a lantern"
    return store, scope, _add(_items(store), scope, texts)


@pytest.mark.parametrize("n", [RARE + 500, 1_400], ids=["past-rare", "below-rare"])
def test_a_common_word_costs_a_search_the_same_in_a_store_twice_as_large(
    tmp_path: Path, n: int,
) -> None:
    # Below RARE the word is common as held by every item: before, a store of 1,400 and
    # one of 2,800 items ranked all of them (311 against 581 hundred-steps).
    small, scope, small_ids = _harbor(tmp_path / "small.db", n)
    large, _, large_ids = _harbor(tmp_path / "large.db", 2 * n)
    try:
        found_small, steps_small = _search(small, "harbor lantern", scope)
        found_large, steps_large = _search(large, "harbor lantern", scope)
    finally:
        small.close()
        large.close()
    # Before: every "harbor" item ranked by BM25 and joined, twice the steps in twice
    # the items (1,691 against 3,370 hundred-steps; now 234 and 232).
    assert steps_large <= 1.2 * steps_small + 20, (steps_small, steps_large)
    for found, ids in ((found_small, small_ids), (found_large, large_ids)):
        lanterns = [ids[i * (len(ids) // 5)] for i in range(5)]
        # every item with the rare word first, then the newest with the common one
        assert sorted(found[:5]) == lanterns
        assert found[5:] == [i for i in reversed(ids) if i not in lanterns][:45]


def test_a_rare_word_costs_the_same_however_many_items_its_owner_has(
    tmp_path: Path,
) -> None:
    found: list[list[str]] = []
    steps: list[int] = []
    for n in (1_000, 8_000):
        store = SQLiteStore(tmp_path / f"owner-{n}.db")
        scope = Scope.user_scope("bob")
        ids = _add(_items(store), scope, [f"groceries list {i}" for i in range(n)]
                   + [f"the puffin colony {i}" for i in range(10)])
        try:
            hits, work = _search(store, "puffin", scope)
        finally:
            store.close()
        found.append([str(ids.index(i) - n) for i in hits])
        steps.append(work)
    assert found[0] == found[1] and len(found[0]) == 10
    # Before: SQLite walked every item of the owner and looked each up among the matches
    # (167 against 1,287 hundred-steps; now 8 and 10).
    assert steps[1] <= 1.2 * steps[0] + 20, steps


def _bm25(store: SQLiteStore, query: str, user: str, depth: int) -> list[int]:
    """FTS5's BM25 over every term of ``query`` among the items ``user`` sees (the oracle)."""
    plan = get_analyzer("bigram").query(query)
    t = _items(store).table
    return [int(r[0]) for r in store._conn.execute(
        f"SELECT i.id FROM {t} JOIN memory_items i ON i.id = {t}.rowid WHERE {t} MATCH ?"
        " AND i.tenant = 'default' AND (i.scope = 'tenant' OR i.user_id = ?)"
        f" ORDER BY bm25({t}, 1.0, 0.5), i.id LIMIT ?",
        (f"{{body subject}} : ({plan.match})", user, depth))]


def _varied(n: int) -> list[str]:
    """``n`` texts saying "harbor" once to four times, a few "lantern": BM25 orders them."""
    return [f"{'harbor ' * (1 + i % 4)}crane {i} {'lantern' if i % 7 == 0 else ''}"
            for i in range(n)]


def test_a_store_of_few_items_ranks_as_bm25_over_every_term(store: SQLiteStore) -> None:
    items = _items(store)
    alice = Scope.user_scope("alice")
    _add(items, alice, _varied(SMALL - 20))
    _add(items, Scope.user_scope("bob"), ["harbor lantern crane"] * 20, start=1_000)
    plan = get_analyzer("bigram").query("harbor lantern crane")
    expected = _bm25(store, "harbor lantern crane", "alice", 40)
    assert len(expected) == 40
    assert items.keyword(plan, ItemFilter(alice), 40) == expected
    assert items.keyword(plan, ItemFilter(alice), 40) == expected  # with what was kept


def test_an_erasure_makes_a_common_word_rare_again(store: SQLiteStore) -> None:
    items = _items(store)
    alice = Scope.user_scope("alice")
    _add(items, alice, [f"a quiet bay {i}" for i in range(1_000)])
    ids = _add(items, alice, _varied(2_000), start=5_000)
    plan = get_analyzer("bigram").query("harbor")
    # common (two thirds of the items hold it): the newest holding it, not BM25's order
    assert items.keyword(plan, ItemFilter(alice), 20) == ids[::-1][:20]
    store.eraser.erase_items(ids[1_000:])  # half of the 2,000 items left hold it: rare
    assert items.keyword(plan, ItemFilter(alice), 20) == _bm25(store, "harbor", "alice", 20)


def test_a_fresh_process_first_search_ranks_no_common_word_item_by_item(
        tmp_path: Path) -> None:
    # A store opened anew (a fresh process) knows no counts and no stamp. Its first search
    # took the store for a small one: it ranked every item holding the common word, found
    # the store large, then counted and ranked again (426 hundred-steps here; now 115, of
    # which counting the common word is most; 15 warm).
    path = tmp_path / "harbor.db"
    first, scope, ids = _harbor(path, 1_400)
    first.close()
    fresh = SQLiteStore(path)
    ran: list[str] = []
    try:
        plan = get_analyzer("bigram").query("harbor lantern")
        fresh._conn.set_trace_callback(ran.append)
        try:
            found_cold = _items(fresh).keyword(plan, ItemFilter(scope), 50)
        finally:
            fresh._conn.set_trace_callback(None)
        found_warm, _ = _search(fresh, "harbor lantern", scope)
    finally:
        fresh.close()
    assert found_cold == found_warm
    lanterns = [ids[i * (len(ids) // 5)] for i in range(5)]
    assert sorted(found_cold[:5]) == lanterns
    ranked = [q for q in ran if "bm25(" in q]
    assert len(ranked) == 1 and "harbor" not in ranked[0], ranked
