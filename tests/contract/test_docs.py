"""Contract: indexed files, their chunks and keyword search over them (DocStore)."""

from __future__ import annotations

from memci.memory import Chunk
from memci.store import DocStore
from memci.text import Analyzer

ROOT = "/data/project"


def chunks(*texts: tuple[str, str]) -> list[Chunk]:
    return [Chunk(kind, f"section {i}", i * 10 + 1, i * 10 + 9, text,
                  symbol="fn" if kind == "code" else None)
            for i, (kind, text) in enumerate(texts)]


def put(docs: DocStore, path: str, *texts: tuple[str, str], sha: str = "s1") -> int:
    kind = "code" if any(k == "code" for k, _ in texts) else "doc"
    return docs.put_file(path, kind=kind, mtime_ns=1, size=100, sha256=sha,
                         chunks=chunks(*texts), indexed=0.0)


def test_a_file_and_its_chunks_come_back(docs: DocStore) -> None:
    file_id = put(docs, f"{ROOT}/guide.md", ("markdown", "install the kayak rack"),
                  ("markdown", "paddle safely"))
    found = docs.file(f"{ROOT}/guide.md")
    assert found is not None and found.id == file_id
    assert (found.kind, found.mtime_ns, found.size, found.sha256) == ("doc", 1, 100, "s1")
    assert docs.file(f"{ROOT}/nothing.md") is None
    docs.touch(file_id, mtime_ns=2, size=101)
    touched = docs.file(f"{ROOT}/guide.md")
    assert touched is not None and (touched.mtime_ns, touched.size, touched.sha256) == (
        2, 101, "s1")
    ids = docs.of_kind("markdown")
    hits = docs.chunks([ids[1], 99_999, ids[0]])
    assert [(c.text, c.start_line, c.end_line) for c in hits] == [
        ("paddle safely", 11, 19), ("install the kayak rack", 1, 9)]
    assert hits[0].path == f"{ROOT}/guide.md" and hits[0].title == "section 1"
    assert docs.paths() == [f"{ROOT}/guide.md"]


def test_putting_a_file_again_replaces_all_its_chunks(
    docs: DocStore, analyzer: Analyzer,
) -> None:
    first = put(docs, f"{ROOT}/a.md", ("markdown", "old kayak text"),
                ("markdown", "old paddle text"))
    old_ids = docs.of_kind("markdown")
    again = put(docs, f"{ROOT}/a.md", ("markdown", "new canoe text"), sha="s2")
    assert again == first
    new_ids = docs.of_kind("markdown")
    assert len(old_ids) == 2 and len(new_ids) == 1
    assert docs.keyword(analyzer.query("kayak"), kind=None, depth=10) == []
    assert docs.keyword(analyzer.query("canoe"), kind=None, depth=10) == new_ids
    assert [c.text for c in docs.chunks(old_ids)] in ([], ["new canoe text"])


def test_keyword_search_with_kinds(docs: DocStore, analyzer: Analyzer) -> None:
    put(docs, f"{ROOT}/notes.txt", ("text", "the deploy script runs nightly"))
    put(docs, f"{ROOT}/guide.md", ("markdown", "how to deploy: run the deploy script"))
    put(docs, f"{ROOT}/deploy.py", ("code", "def deploy(): run the script"))
    plan = analyzer.query("deploy script")

    def paths(kind: str | None) -> list[str]:
        return [c.path.rsplit("/", 1)[1] for c in docs.chunks(
            docs.keyword(plan, kind=kind, depth=10))]

    assert sorted(paths(None)) == ["deploy.py", "guide.md", "notes.txt"]
    assert paths(None)[0] == "guide.md"  # "deploy" twice, and "script"
    assert sorted(paths("doc")) == ["guide.md", "notes.txt"]
    assert paths("code") == ["deploy.py"] and paths("markdown") == ["guide.md"]
    assert len(docs.keyword(plan, kind=None, depth=1)) == 1
    assert sorted(c.path for c in docs.chunks(docs.of_kind("doc"))) == [
        f"{ROOT}/guide.md", f"{ROOT}/notes.txt"]


def test_files_under_a_folder_and_removing_them(docs: DocStore, analyzer: Analyzer) -> None:
    inside = put(docs, f"{ROOT}/src/a.py", ("code", "kayak code"))
    deeper = put(docs, f"{ROOT}/src/pkg/b.py", ("code", "kayak module"))
    put(docs, f"{ROOT}/srcx/c.py", ("code", "kayak elsewhere"))
    found = docs.files_under(f"{ROOT}/src", f"{ROOT}/src/")
    assert sorted(f.id for f in found) == sorted([inside, deeper])
    assert [f.id for f in docs.files_under(f"{ROOT}/src/a.py", f"{ROOT}/src/a.py")] == [inside]
    docs.remove([inside, deeper])
    assert docs.paths() == [f"{ROOT}/srcx/c.py"]
    assert [c.path for c in docs.chunks(docs.keyword(analyzer.query("kayak"), kind=None,
                                                     depth=10))] == [f"{ROOT}/srcx/c.py"]
