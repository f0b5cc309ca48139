"""Contract: stored vectors and exact nearest-neighbour search (VectorStore)."""

from __future__ import annotations

import math
import random
from collections.abc import Collection, Sequence

import pytest

from memci.errors import MemciError
from memci.store import VectorStore
from tests.contract.conftest import Store

DIM = 8


def unit(vector: Sequence[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector]


def vectors_of(count: int, seed: int = 5) -> dict[int, tuple[list[float], int]]:
    rng = random.Random(seed)
    return {ref: (unit([rng.gauss(0, 1) for _ in range(DIM)]), rng.randint(1, 4))
            for ref in range(1, count + 1)}


def exact(data: dict[int, tuple[list[float], int]], query: Sequence[float], k: int,
          sessions: Collection[int] | None = None,
          refs: Collection[int] | None = None) -> list[int]:
    scored = [(ref, sum(a * b for a, b in zip(vec, query, strict=True)))
              for ref, (vec, sid) in data.items()
              if (sessions is None or sid in sessions) and (refs is None or ref in refs)]
    return [ref for ref, _ in sorted(scored, key=lambda t: (-t[1], t[0]))[:k]]


def put(vectors: VectorStore, kind: str, data: dict[int, tuple[list[float], int]]) -> None:
    vectors.add(kind, [(ref, sid) for ref, (_, sid) in data.items()],
                [vec for vec, _ in data.values()])


def test_search_is_exact_and_scores_are_cosines(vectors: VectorStore) -> None:
    data = vectors_of(40)
    put(vectors, "message", data)
    query = unit([1.0] * DIM)
    found = vectors.search("message", query, 10)
    assert [ref for ref, _ in found] == exact(data, query, 10)
    best_ref, best_score = found[0]
    assert best_score == pytest.approx(sum(a * b for a, b in zip(data[best_ref][0], query,
                                                                 strict=True)), abs=1e-5)
    assert vectors.search("message", data[7][0], 1)[0] == (7, pytest.approx(1.0, abs=1e-5))
    assert vectors.count("message") == 40 and vectors.newest_ref("message") == 40
    assert vectors.search("item", query, 5) == [] and vectors.count("item") == 0  # kinds apart


def test_filters_come_before_ranking(vectors: VectorStore) -> None:
    data = vectors_of(60)
    put(vectors, "chunk", data)
    query = data[3][0]
    assert [r for r, _ in vectors.search("chunk", query, 5, sessions={2})] == exact(
        data, query, 5, sessions={2})
    refs = set(range(20, 45))
    assert [r for r, _ in vectors.search("chunk", query, 5, refs=refs)] == exact(
        data, query, 5, refs=refs)
    assert vectors.search("chunk", query, 5, sessions=[]) == []
    assert vectors.search("chunk", query, 5, refs=[]) == []
    assert vectors.search("chunk", query, 0) == []


def test_a_zero_vector_is_never_found(vectors: VectorStore) -> None:
    put(vectors, "message", vectors_of(3))
    assert vectors.search("message", [0.0] * DIM, 5) == []


def test_replacing_and_deleting(vectors: VectorStore) -> None:
    data = vectors_of(10)
    put(vectors, "item", data)
    flipped = [-x for x in data[5][0]]
    vectors.add("item", [(5, 1)], [flipped])
    assert vectors.count("item") == 10
    assert vectors.search("item", flipped, 1)[0][0] == 5
    vectors.delete("item", [5, 6, 999])
    assert vectors.count("item") == 8
    assert 5 not in [r for r, _ in vectors.search("item", flipped, 10)]
    vectors.delete("item", [])


def test_a_vector_of_another_size_is_refused(vectors: VectorStore) -> None:
    put(vectors, "message", vectors_of(2))
    with pytest.raises(MemciError):
        vectors.add("message", [(9, 1)], [[1.0, 0.0]])
    assert vectors.count("message") == 2


def test_a_rolled_back_write_leaves_no_vector(store: Store, vectors: VectorStore) -> None:
    with pytest.raises(RuntimeError), store.atomic():
        put(vectors, "message", vectors_of(3))
        raise RuntimeError("abort")
    assert vectors.count("message") == 0 and vectors.newest_ref("message") == 0
    put(vectors, "message", vectors_of(3))
    assert vectors.count("message") == 3


def test_missing_refs_are_found_oldest_first(
    store: Store, vectors: VectorStore,
) -> None:
    from memci.memory import Scope, get_analyzer
    from memci.store import NewItem

    items = store.items(get_analyzer("bigram"))
    scope = Scope.tenant_scope("t")
    ids = [items.add(NewItem(scope, "fact", None, f"fact {i}", f"fact {i}", None, None, None,
                             0.0, 0.0)) for i in range(5)]
    assert vectors.missing("item", 10) == ids
    vectors.add("item", [(ids[0], None), (ids[2], None)], [unit([1.0] * DIM)] * 2)
    assert vectors.missing("item", 10) == [ids[1], ids[3], ids[4]]
    assert vectors.missing("item", 1) == [ids[1]]
