"""Every process builds the same request: nothing a build sends moves with the hash seed.

Servers on one database each answer a session (tests/multiserver.py), and a prompt
cache only pays when the request is the same: so a build must not depend on the order a
set or a string-keyed dict gives (Python salts ``hash(str)`` per process). Equal
sentences — the same words, other numbers — once ranked apart by a float sum taken in
set order, so two servers sent different context pools.

Each child process builds the same chats at several budgets with a different
``PYTHONHASHSEED`` and prints a digest of every request it built: on SQLite, and on
PostgreSQL (a fresh database each).
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path

from tests import pg

CHILD = textwrap.dedent("""
    import hashlib, json, random, re, sys
    import memci

    words = ("the quick brown fox jumps over a lazy dog near river bank where alice "
             "met bob on tuesday about paris trip budget hotel flight museum dinner").split()
    zh = ["我们周二在巴黎见面", "预算是三千欧元", "酒店订在卢浮宫附近", "航班早上八点起飞",
          "晚饭去那家小餐馆", "博物馆周一不开门"]
    rng = random.Random(7)
    digest = hashlib.sha256()

    def built(session, budget):
        ctx = session.build(budget=budget)
        sent = json.dumps([[m.role, m.content] for m in ctx.messages],
                          ensure_ascii=False, default=str)
        # The notebook's times move with the clock, not the seed.
        digest.update(re.sub(r"\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\dZ", "<time>", sent).encode())

    with memci.Engine.open(sys.argv[1], workers=0) as engine:
        # Chats whose lines say the same with other numbers.
        for n, budget in enumerate((700, 700, 700, 1000, 1500)):
            session = engine.session(f"same-{n}")
            for i in range(60):
                # Two clients a session, as the servers' test has them.
                text = (f"client {n + 25 * (i % 2)} message {i // 2}: "
                        + "the quick brown fox " * (i // 2 % 9))
                session.add_many([{"role": "user", "content": text},
                                  {"role": "assistant", "content": f"noted {i}"}])
                built(session, budget)
        # A varied chat, English and Chinese, with questions about what came before.
        session = engine.session("varied")
        for i in range(80):
            line = " ".join(rng.choice(words) for _ in range(rng.randint(4, 30)))
            if i % 4 == 3:
                line = "，".join(rng.sample(zh, 3)) + "。"
            session.add_many([{"role": "user", "content": line + "?"},
                              {"role": "assistant", "content": line.upper() + "."}])
            built(session, 900 if i % 2 else 2500)
        # A tool loop whose outputs leave the window.
        session = engine.session("loop")
        session.add({"role": "user", "content": "fix the failing test in parser.py"})
        for i in range(30):
            call = f"call_{i}"
            asked = json.dumps({"cmd": f"pytest -k t{i}"})
            session.add_many([
                {"role": "assistant", "content": "",
                 "tool_calls": [{"id": call, "type": "function",
                                 "function": {"name": "bash", "arguments": asked}}]},
                {"role": "tool", "tool_call_id": call,
                 "content": "\\n".join(f"tests/test_{i}.py::t{j} PASSED" for j in range(i % 7 + 2))
                            + f"\\nexit code {i % 2}"},
            ])
            built(session, 1200)
    print(digest.hexdigest())
""")


def _digest(store: str, seed: int) -> str:
    env = {**os.environ, "PYTHONHASHSEED": str(seed)}
    run = subprocess.run([sys.executable, "-c", CHILD, store],
                         env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    return run.stdout.strip()


def test_requests_do_not_move_with_the_hash_seed(tmp_path: Path) -> None:
    digests = {seed: _digest(str(tmp_path / f"s{seed}.db"), seed) for seed in range(1, 5)}
    assert len(set(digests.values())) == 1, digests


def test_servers_on_postgresql_build_the_same_requests() -> None:
    # Where processes meet: servers on one database. Each child has a database of its
    # own (the same chats from empty). The chats also archive pages that memory had kept
    # before, summarized this time: that once failed on PostgreSQL ("duplicate key").
    digests = {seed: _digest(pg.fresh_database("memci_seed"), seed) for seed in (1, 2)}
    assert len(set(digests.values())) == 1, digests


def test_sentences_alike_but_for_their_words_score_exactly_alike() -> None:
    """A sentence's salience does not depend on the order its terms' set iterates in."""
    from collections import Counter

    from memci.summarize._salience import Features, score

    rng = random.Random(3)
    vocabulary = [f"w{i:03d}x" for i in range(400)]
    counts = [1, 2, 3, 5, 8, 13, 21, 34]
    for _ in range(200):
        tf: Counter[str] = Counter()
        sentences = []
        drawn = rng.sample(vocabulary, 6 * len(counts))
        for n in range(6):  # the same counts, other words, in other orders
            words = drawn[n * len(counts):(n + 1) * len(counts)]
            tf.update(dict(zip(words, counts, strict=True)))
            rng.shuffle(words)
            sentences.append(Features(tuple(words), 0, 0, 0, 0, False, False, 40))
        scores = {score(f, tf, position=3, total=9) for f in sentences}
        assert len(scores) == 1, scores
