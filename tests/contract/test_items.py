"""Contract: long-term memory items, their owners and who may see them (ItemStore)."""

from __future__ import annotations

from memci.store import ItemFilter, ItemStore, NewItem, Scope, SessionRecord
from memci.text import Analyzer
from tests.contract.conftest import Store

T0 = 1_770_000_000.0


def add(items: ItemStore, scope: Scope, text: str, *, kind: str = "fact",
        subject: str | None = None, at: float = T0, summary: str | None = None) -> int:
    return items.add(NewItem(scope, kind, subject, text, text.lower(), summary, "test", None,
                             at, at))


def test_an_item_comes_back_as_stored(
    items: ItemStore, session: SessionRecord,
) -> None:
    scope = Scope.of(session)
    made = items.add(NewItem(scope, "preference", "tea", "Likes green tea", "likes green tea",
                             "green tea, no sugar", "chat#p1", 3, T0 - 60, T0))
    item = items.get(made)
    assert item is not None
    assert (item.scope, item.tenant, item.user, item.session_id) == (
        "session", "t", "u", session.id)
    assert (item.kind, item.subject, item.text, item.summary, item.source, item.page) == (
        "preference", "tea", "Likes green tea", "green tea, no sugar", "chat#p1", 3)
    assert item.seen == 1 and item.current
    assert item.valid_from.timestamp() == T0 - 60 and item.created.timestamp() == T0
    assert items.get(made + 1000) is None
    assert [i.id for i in items.get_many([made + 1000, made])] == [made]


def test_ids_and_revisions_grow(items: ItemStore) -> None:
    scope = Scope.tenant_scope("t")
    before = items.version()
    first = add(items, scope, "one")
    second = add(items, scope, "two")
    assert second > first and items.version() > before
    revision = items.version()
    items.end(first, T0 + 5)
    assert items.version() > revision


def test_merging_finds_the_same_text_of_the_same_owner(items: ItemStore) -> None:
    alice = Scope.user_scope("alice", "t")
    made = add(items, alice, "Lives in Oslo")
    assert items.find(alice, "fact", "lives in oslo") == made
    assert items.find(Scope.user_scope("bob", "t"), "fact", "lives in oslo") is None
    assert items.find(alice, "preference", "lives in oslo") is None
    items.merge(made, now=T0 + 10, summary="Oslo, Norway", source=None, subject="home")
    merged = items.get(made)
    assert merged is not None and merged.seen == 2 and merged.summary == "Oslo, Norway"
    assert merged.source == "test" and merged.subject == "home"
    items.merge(made, now=T0 + 20, summary=None, source="chat#p9", subject="other")
    again = items.get(made)
    assert again is not None and again.summary == "Oslo, Norway" and again.source == "chat#p9"
    assert again.subject == "home" and again.seen == 3  # a subject only fills a missing one


def test_superseding_keeps_the_history(items: ItemStore) -> None:
    alice = Scope.user_scope("alice", "t")
    old = add(items, alice, "Lives in Oslo", subject="home", at=T0)
    other = add(items, Scope.user_scope("bob", "t"), "Lives in Rome", subject="home", at=T0)
    new = add(items, alice, "Lives in Bergen", subject="home", at=T0 + 100)
    items.supersede(alice, "fact", "home", by=new, since=T0 + 100, now=T0 + 100)
    replaced = items.get(old)
    assert replaced is not None and not replaced.current
    assert replaced.superseded_by == new and replaced.valid_to is not None
    assert replaced.valid_to.timestamp() == T0 + 100
    assert items.get(other) is not None and items.get(other).current  # type: ignore[union-attr]
    assert [i.id for i in items.history(new)] == [old, new]
    assert items.find(alice, "fact", "lives in oslo") is None  # superseded: not merged into
    plain = add(items, alice, "No subject")
    assert [i.id for i in items.history(plain)] == [plain]
    assert items.history(plain + 1000) == []


def test_visibility_follows_the_scopes(
    store: Store, items: ItemStore, analyzer: Analyzer,
) -> None:
    s1 = store.ensure_session("t", "s1", "alice", {})
    s2 = store.ensure_session("t", "s2", "alice", {})
    s3 = store.ensure_session("t", "s3", "bob", {})
    made = {
        "tenant": add(items, Scope.tenant_scope("t"), "tenant fact", at=T0),
        "alice": add(items, Scope.user_scope("alice", "t"), "alice fact", at=T0 + 1),
        "s1": add(items, Scope.of(s1), "s1 fact", at=T0 + 2),
        "s2": add(items, Scope.of(s2), "s2 fact", at=T0 + 3),
        "bob": add(items, Scope.of(s3, "user"), "bob fact", at=T0 + 4),
        "other": add(items, Scope.tenant_scope("other"), "other tenant fact", at=T0 + 5),
    }
    names = {v: k for k, v in made.items()}

    def seen(scope: Scope) -> list[str]:
        return [names[i.id] for i in items.visible(ItemFilter(scope))]

    assert seen(Scope.of(s1)) == ["s1", "alice", "tenant"]  # newest first
    assert seen(Scope.of(s1, "user")) == ["s2", "s1", "alice", "tenant"]
    assert seen(Scope.of(s1, "tenant")) == ["bob", "s2", "s1", "alice", "tenant"]
    assert seen(Scope.tenant_scope("other")) == ["other"]
    assert len(items.visible(ItemFilter(Scope.of(s1, "tenant")), limit=2)) == 2
    assert sorted(items.ids(ItemFilter(Scope.of(s3)))) == sorted([made["tenant"], made["bob"]])
    plan = analyzer.query("fact")
    found = {names[i] for i in items.keyword(plan, ItemFilter(Scope.of(s2)), 10)}
    assert found == {"tenant", "alice", "s2"}
    assert items.session_names([s1.id, s3.id]) == {s1.id: "s1", s3.id: "s3"}


def test_kinds_currency_and_time(items: ItemStore) -> None:
    scope = Scope.tenant_scope("t")
    fact = add(items, scope, "a fact", at=T0)
    pref = add(items, scope, "a preference", kind="preference", at=T0 + 50)
    ended = add(items, scope, "an ended fact", at=T0 + 100)
    items.end(ended, T0 + 200)
    everything = ItemFilter(scope, current=False)
    assert sorted(items.ids(everything)) == sorted([fact, pref, ended])
    assert sorted(items.ids(ItemFilter(scope))) == sorted([fact, pref])
    assert items.ids(ItemFilter(scope, kinds=["preference"])) == [pref]
    assert items.ids(ItemFilter(scope, exclude_kinds=["fact"])) == [pref]
    assert items.valid_within(everything, T0 + 10, T0 + 150) == {pref, ended}
    assert items.valid_within(ItemFilter(scope), T0 + 10, T0 + 150) == {pref}


def test_keyword_search_covers_text_summary_and_subject(
    items: ItemStore, analyzer: Analyzer,
) -> None:
    scope = Scope.tenant_scope("t")
    by_text = add(items, scope, "prefers window seats on trains")
    by_summary = add(items, scope, "travel note", summary="window seat wanted")
    by_subject = add(items, scope, "aisle is fine", subject="window")
    add(items, scope, "unrelated")
    found = items.keyword(analyzer.query("window"), ItemFilter(scope), 10)
    assert set(found) == {by_text, by_summary, by_subject}
    assert items.keyword(analyzer.query("submarine"), ItemFilter(scope), 10) == []
    merged_summary = add(items, scope, "a plain note")
    items.merge(merged_summary, now=T0, summary="mentions the window", source=None,
                subject=None)
    assert merged_summary in items.keyword(analyzer.query("window"), ItemFilter(scope), 10)


def test_batches_of_items_are_single_ones_at_once(items: ItemStore) -> None:
    """find_many, add_many and supersede_many give what find, add and supersede give."""
    alice = Scope.user_scope("alice", "t")
    bob = Scope.user_scope("bob", "t")
    old = {n: add(items, alice, f"page {n} said this", subject=f"page {n}") for n in (1, 2)}
    theirs = add(items, bob, "page 1 said this", subject="page 1")
    assert items.find_many(alice, "fact", ["page 1 said this", "page 2 said this",
                                           "nothing"]) == {
        "page 1 said this": old[1], "page 2 said this": old[2]}
    assert items.find_many(alice, "fact", []) == {}
    made = items.add_many([NewItem(alice, "fact", f"page {n}", f"Page {n} says more",
                                   f"page {n} says more", None, "test", n, T0 + n, T0 + n)
                           for n in (1, 2, 3)])
    assert len(made) == 3 and made == sorted(made) and min(made) > theirs
    assert [items.get(i).text for i in made] == [  # type: ignore[union-attr]
        "Page 1 says more", "Page 2 says more", "Page 3 says more"]
    items.supersede_many(alice, "fact", {f"page {n}": made[n - 1] for n in (1, 2, 3)},
                         since=T0 + 50, now=T0 + 50)
    for n in (1, 2):
        replaced = items.get(old[n])
        assert replaced is not None and replaced.superseded_by == made[n - 1]
        assert replaced.valid_to is not None and replaced.valid_to.timestamp() == T0 + 50
    assert all(items.get(i).current for i in made)  # type: ignore[union-attr]
    assert items.get(theirs).current  # type: ignore[union-attr]  # another owner's
    assert items.add_many([]) == []
    items.supersede_many(alice, "fact", {}, since=T0, now=T0)
