"""The offline token estimator: cl100k_base counts from character classes, no dependencies.

:func:`estimate_tokens` predicts how many tokens OpenAI's ``cl100k_base`` encoding gives a
text without the encoding's 1.7 MB vocabulary. It follows the encoding's pre-tokenizer (the
regex that cuts text into words, number groups, punctuation runs and whitespace before
byte-pair merging) and prices each kind of piece:

- an ASCII letter run (a word, or a piece of an identifier) costs ``W_WORD`` plus, for every
  pair of adjacent letters, ``W_SPLIT`` times the chance that cl100k_base puts a token
  boundary between those two letters (:data:`_SPLIT_TABLE`). Common English words come
  out at one token, rare names and identifiers (``irradiance``, ``pvlib``) at several —
  length alone cannot tell them apart, letter pairs can. A camelCase hump costs extra;
- digits go in groups of at most three, each group one token;
- a punctuation run is one token plus a little per character, except rules (``-----``,
  ``=====``, ``#####``), which cl100k_base covers up to 64 characters a token; a single
  punctuation character glued to a following word (``.append``, ``_name``, ``/usr``)
  usually merges into the word's token and costs nothing more;
- a newline run costs a token unless it follows punctuation (a colon, bracket or comma and
  the newline after it are one token); an indentation of two or more spaces is one token;
  a space before a digit is one;
- a CJK ideograph costs one token when cl100k_base has it as one token (:data:`_CJK_ONE`,
  549 common characters), about two otherwise; the words of several ideographs that are
  one token (:data:`_CJK_WORDS`: 用户, 删除, 字符串 …) cost one. Both lists are taken from
  the encoding's vocabulary;
- kana, hangul, Cyrillic, other letters, symbols, box drawing and emoji cost a fixed amount
  per character each.

The weights were fitted by least squares on the relative error per message against
cl100k_base, on the *fit* half of the data described in ``bench/bench_tokens.py`` (one of
the three agent traces, half of the KdConv dialogues, half of the Python stdlib modules and
of its pydoc topics, and JSON and mixed Chinese/English built from those; the script
letters on half of the system's UI translations); the other half is the held-out set the
benchmark reports on. A few costs come straight from the vocabulary instead (marked "not
fitted"). ``python bench/bench_tokens.py --fit`` refits and prints this module's
constants. The estimate is tuned for English, code, tool output and Chinese; German,
French and Spanish come out 10–20% low.

Invariants: the empty text counts 0 and any other text at least 1; the count depends on the
text only (never on earlier calls — the per-word cache holds pure function values);
``estimate_tokens(t) == max(1, round(sum(w * f for w, f in zip(weights(), features(t)))))``
for non-empty ``t``; the implementation is pure Python (``re``, ``bytes.translate``,
``bytes.count``) and counts several megabytes per second.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from typing import Final

__all__ = ["FEATURES", "estimate_lines", "estimate_tokens", "features", "weights"]

# ---------------------------------------------------------------------------------------
# Fitted weights (tokens per feature unit). Fitted by `python bench/bench_tokens.py --fit`
# on the fit half of the data; see the module docstring.
# ---------------------------------------------------------------------------------------
W_WORD: Final = 0.969  # per ASCII letter run
W_SPLIT: Final = 0.828  # per expected token boundary inside a letter run (_SPLIT_TABLE)
W_CAMEL: Final = 0.845  # per lower→upper transition inside a run (camelCase hump)
W_DIGITS: Final = 0.905  # per group of up to three digits (estimated from run lengths)
W_PUNCT: Final = 0.224  # per ASCII punctuation character outside rules
W_PUNCT_RUN: Final = 0.905  # per run of ASCII punctuation characters
W_RULE: Final = 0.016  # per character of a ----/====/####/**** rule: 64 per token (not fitted)
W_PUNCT_WORD: Final = -0.877  # per single punctuation character glued to a following word
W_NEWLINE: Final = 1.271  # per newline run not absorbed by punctuation before it
W_INDENT: Final = 0.645  # per run of two or more spaces/tabs before non-space
W_SPACE_DIGIT: Final = 1.336  # per space or tab right before a digit
W_CJK_ONE: Final = 1.010  # per ideograph that is one cl100k_base token (_CJK_ONE)
W_CJK_OTHER: Final = 2.063  # per other ideograph (two or three byte-level tokens)
W_CJK_WORD: Final = 1.022  # per multi-ideograph word that is one token (_CJK_WORDS)
W_CJK_PUNCT: Final = 0.936  # per CJK punctuation or full-width character (，。！（）)
W_KANA: Final = 0.958  # per hiragana/katakana character
W_HANGUL: Final = 1.130  # per hangul syllable or jamo
W_CYRILLIC: Final = 0.465  # per Cyrillic letter
W_LETTER: Final = 1.071  # per other non-ASCII letter (accented Latin, Greek, Arabic, Indic …)
W_BOX: Final = 1.945  # per box-drawing character (│ ╭ ┼ …), mean of U+2500–257F (not fitted)
W_BOX_RULE: Final = 0.125  # per ─ or █ in runs: 8 per token (not fitted)
W_SYMBOL: Final = 0.776  # per other non-ASCII symbol (’ — … → ✓, NBSP, CJK radicals …)
W_EMOJI: Final = 2.833  # per four-byte character (emoji, rare ideographs)

# cl100k_base's chance of a token boundary between two adjacent letters inside a letter run,
# in ninths: row = first letter, column = second letter (a..z), case folded. Measured by
# `bench/bench_tokens.py --fit` on every letter run of the fit corpus, tokenized by
# cl100k_base (weighted by occurrence, smoothed toward one half).
_SPLIT_TABLE: Final = (
    # abcdefghijklmnopqrstuvwxyz
    "60008002000000102000001000",  # a
    "03230828108068067113024406",  # b
    "11130760070017065120133814",  # c
    "11800417132285174112035009",  # d
    "03001002350000510000310004",  # e
    "07420067044130014020095404",  # f
    "17690630147141154100039422",  # g
    "04810864041743047030194108",  # h
    "00000001000000000000402040",  # i
    "04970647880478044804044494",  # j
    "24860624178582428938291434",  # k
    "10510025083046008200020804",  # l
    "00810648043112004902049704",  # m
    "15100104110130038600115801",  # n
    "00001002110000008000010003",  # o
    "07430771241078002010016214",  # p
    "12294447444049901134041244",  # q
    "13110402181200036000003008",  # r
    "18160400190223010300081701",  # s
    "14330380047356028010081105",  # t
    "00000008041000104000207044",  # u
    "07440442048958128853241437",  # v
    "02950890042481074018884149",  # w
    "13062296044818514990958006",  # x
    "92493969144140008400791816",  # y
    "07420272244598284870444732",  # z
)

# The CJK unified ideographs that cl100k_base encodes as a single token (all others take
# two or three byte-level tokens). Taken from the encoding itself, not fitted.
_CJK_ONE: Final = (
    "一万三上下不与专业东两个中串为主么义之也书了事二于五些交产享京人亿今介从他付代以们件价任份"
    "企优会传但位体何余作你使例供価保信修倍值停像元先入全公共关其具内円册再写出击分列则初利别到"
    "制前力功加务动動包化北区十午华单南即历原去县参及友反发取变口只可台右号司合同名后向否含听启"
    "告员周命和品哈商問器四回因国图土在地场址型城基報場填增声处备复外多大天失头女好如始子字存学"
    "安宋完定实审客家容密对导将小少尔就局展山岁州工左已市布常平年并广序库应店度建开异式引张当录"
    "形影径待後得微心必志态思性总息您情意感成我或户所手打找技投报拉持指按换据排接推提播支收改放"
    "政效数整文料断新方族无日时明易星是時景更最月有服期木未本机权束条来板构析果查标样核格案检模"
    "次款止正此步歳段每比民気水求江汽没治法注活流海消清游源火点無然片版物特率环现球理生用由电男"
    "画界番登的监目直相省看県真知码确示社票私种科秒称移程稍税稿空立站章端笑符第等签简算管箱米类"
    "系素索约级线组经结给络统编网置美老考者而联能自至色节英藏行表装西要見见规视角解言計記話読计"
    "认议记论设证评试话询该详语误说请读调象责败账货购费资起超路身车转软载辑输达过运近还这进连述"
    "退送选通速造連道邮部都配释里重量金钟钮链销错键长開間関门闭问间队阳陆限院除雅集雷需非面音页"
    "项预频题额首验高黑"
)

# The words of two or more CJK ideographs that cl100k_base encodes as one token (mostly
# software vocabulary: 用户 删除 字符串 …). Taken from the encoding itself, not fitted.
_CJK_WORDS: Final = (
    "一个 一页 万元 上传 下载 不存在 不能 不能为空 中国 为空 事件 产品 亿元 今年 "
    "代码 以上 以下 价格 任务 位置 作者 使用 例如 保存 信息 修改 全部 公司 "
    "关闭 其中 其他 内容 函数 分享 分类 分钟 列表 创建 初始化 删除 删除成功 功能 "
    "加载 动生成 北京 单位 参数 发布 发送 取消 可以 可能 同时 名称 周期 命周期 "
    "商品 图片 在线 地址 声明 处理 备注 大小 失败 如果 姓名 字段 字符 字符串 "
    "存在 宋体 完成 定义 审核 密码 对象 小时 属性 开始 异常 当前 微软雅黑 成功 "
    "我们 我的 所有 手机 手机号 执行 报道 按钮 排序 描述 提交 提示 搜索 操作 "
    "支付 数字 数据 数据库 数组 数量 文件 文字 文章 新增 方式 方法 日期 时间 "
    "是否 显示 時間 更新 有效 服务 服务器 权限 条件 来源 查询 标题 格式 正在 "
    "正确 没有 注册 注意 测试 消息 添加 点击 無料 版本 状态 生成 用户 用户名 "
    "电话 登录 监听 监听页面 相关 确定 确认 移到 程序 管理 管理员 类型 系统 结束 "
    "结果 编号 编辑 网络 联系 自治 节点 获取 表示 视频 記事 订单 记录 设置 "
    "设计 设计器 评论 详情 说明 请求 请输入 请选择 资源 路径 软雅黑 输入 输出 返回 "
    "进行 连接 退出 送料 选择 通过 邮箱 配置 重新 金额 链接 错误 长度 问题 "
    "隐藏 雅黑 需要 页面 项目 首页 验证 验证码 默认 "
)

# ---------------------------------------------------------------------------------------
# Byte classes. Text is encoded to UTF-8 once; bytes.translate maps every byte to a class
# letter and bytes.count counts class patterns at C speed — far faster than one regex per
# feature. ASCII: a = letter, 0 = digit, . = punctuation (and control), space = space or
# tab, newline = \n or \r; x = a non-ASCII character (its continuation bytes are dropped).
# ---------------------------------------------------------------------------------------


def _table(mapping: dict[int, int], default: int) -> bytes:
    return bytes(mapping.get(b, default) for b in range(256))


def _ascii_classes() -> dict[int, int]:
    out: dict[int, int] = {}
    for b in range(128):
        c = chr(b)
        if c.isalpha():
            out[b] = ord("a")
        elif c.isdigit():
            out[b] = ord("0")
        elif c in " \t\v\f":
            out[b] = ord(" ")
        elif c in "\r\n":
            out[b] = ord("\n")
        else:
            out[b] = ord(".")
    return out


_CLASSES: Final = _table(_ascii_classes(), ord("x"))
# UTF-8 continuation bytes are dropped, so a non-ASCII character is one "x" whatever its
# length — three times fewer bytes to scan in Chinese text, same patterns.
_CONTINUATION: Final = bytes(range(0x80, 0xC0))
# Projections of the class bytes that keep one class and fold the rest into "o", so that
# "end of a run of X" is a single two-byte pattern.
_ONLY_PUNCT: Final = _table({ord("."): ord(".")}, ord("o"))
_ONLY_DIGIT: Final = _table({ord("0"): ord("0")}, ord("o"))
_NEWLINE_VIEW: Final = _table({ord("\n"): ord("n"), ord("."): ord(".")}, ord("o"))
_SPACE_VIEW: Final = _table({ord(" "): ord(" "), ord("\n"): ord("n")}, ord("o"))


def _lead_classes() -> dict[int, int]:
    """UTF-8 lead bytes by script: the lead byte fixes the code point's 64..4096 block."""
    out: dict[int, int] = {}
    for b in range(0xC2, 0xF5):
        if b == 0xC2 or b == 0xE2 or b == 0xEE:
            c = "S"  # Latin-1 symbols (NBSP © °), U+2000–2FFF punctuation/symbols, private use
        elif 0xD0 <= b <= 0xD3:
            c = "R"  # Cyrillic U+0400–04FF
        elif b <= 0xE1:
            c = "L"  # Latin ext., Greek, Armenian, Hebrew, Arabic, Indic, Thai, Vietnamese …
        elif b == 0xE3:
            c = "J"  # CJK punctuation U+3000–303F, kana U+3040–30FF (told apart below)
        elif 0xE4 <= b <= 0xE9:
            c = "C"  # CJK unified ideographs U+4000–9FFF
        elif 0xEA <= b <= 0xED:
            c = "K"  # hangul syllables U+AC00–D7AF (and the rare blocks around them)
        elif b == 0xEF:
            c = "F"  # full-width forms U+FF00–FFEF, CJK compatibility
        else:
            c = "E"  # four-byte characters: emoji, rare ideographs
        out[b] = ord(c)
    return out


_LEADS: Final = _table(_lead_classes(), ord("-"))


def _trie(words: list[str]) -> str:
    """Return a regex matching any of ``words``, longest first.

    Alternatives are grouped by first character, so a position whose character starts no
    word fails after one test.
    """
    by_first: dict[str, list[str]] = {}
    if not words:
        return "(?!)"
    for w in words:
        by_first.setdefault(w[0], []).append(w[1:])
    return "|".join(
        re.escape(c) + "(?:" + "|".join(map(re.escape, sorted(rest, key=len, reverse=True))) + ")"
        for c, rest in sorted(by_first.items())
    )


_RULES: Final = (b"----", b"====", b"####", b"****", b"....", b"____", b"////")
_WORD_RE: Final = re.compile(r"[A-Za-z]+")
_CJK_ONE_RE: Final = re.compile("[" + _CJK_ONE + "]")
_CJK_WORD_RE: Final = re.compile(_trie(_CJK_WORDS.split()))
_CAMEL_RE: Final = re.compile(r"[a-z][A-Z]")

_LETTERS: Final = "abcdefghijklmnopqrstuvwxyz"
_SPLIT: Final = {
    a + b: int(_SPLIT_TABLE[i][j]) / 9
    for i, a in enumerate(_LETTERS)
    for j, b in enumerate(_LETTERS)
}


def _word_parts(word: str) -> tuple[float, int]:
    """Return (expected token boundaries, camelCase humps) of one letter run."""
    low = word.lower()
    split = sum(map(_SPLIT.__getitem__, map(str.__add__, low, low[1:])))
    return split, (0 if low == word else len(_CAMEL_RE.findall(word)))


class _WordCosts(dict[str, float]):
    """Word → token cost, computed on first sight.

    ``map(costs.__getitem__, words)`` runs in C for every word already seen. The cache is
    replaced when it grows past ``_MAX_WORDS``; the values are pure functions of the word,
    so that never changes a count.
    """

    def __missing__(self, word: str) -> float:
        split, camel = _word_parts(word)
        cost = W_WORD + W_SPLIT * split + W_CAMEL * camel
        self[word] = cost
        return cost


_MAX_WORDS: Final = 50_000
_costs = _WordCosts()
_costs_lock = threading.Lock()


def estimate_tokens(text: str) -> int:
    """Estimated cl100k_base token count of ``text``: 0 for ``""``, at least 1 otherwise."""
    if not text:
        return 0
    return max(1, round(_estimate(text)))


_LINES: dict[str, float] = {}  # a line's unrounded estimate, for estimate_lines
_NEWLINE_CHARS: Final = "\r\n"


def estimate_lines(lines: Sequence[str]) -> int:
    """:func:`estimate_tokens` of ``lines`` joined by newlines, from each line's own estimate.

    Every feature of the estimate stays inside a line, except the newline between two: it
    costs a newline run unless punctuation ends the line before it. So a block of lines
    built again from lines already seen costs a sum, not a second pass over its text.
    Lines that are empty or start or end with a newline are counted joined.
    """
    if not lines:
        return 0
    if any(not line or line[0] in _NEWLINE_CHARS or line[-1] in _NEWLINE_CHARS
           for line in lines):
        return estimate_tokens("\n".join(lines))
    if len(_LINES) > _MAX_WORDS:
        _LINES.clear()
    total = 0.0
    for i, line in enumerate(lines):
        cost = _LINES.get(line)
        if cost is None:
            cost = _LINES[line] = _estimate(line)
        if i and not _is_punct(lines[i - 1][-1]):
            total += W_NEWLINE
        total += cost
    return max(1, round(total))


def _is_punct(char: str) -> bool:
    """Whether ``char`` is in the estimate's ASCII punctuation class (absorbs a newline)."""
    return char.isascii() and _CLASSES[ord(char)] == ord(".")


def _estimate(text: str) -> float:
    global _costs
    data = text.encode("utf-8", "surrogatepass")
    cls = data.translate(_CLASSES, _CONTINUATION)
    costs = _costs
    if len(costs) > _MAX_WORDS:
        with _costs_lock:
            costs = _costs = _WordCosts()
    total = sum(map(costs.__getitem__, _WORD_RE.findall(text)))
    total += _ascii_sum(data, cls)
    if not text.isascii():
        total += _non_ascii_sum(text, data)
    return total


def _ascii_counts(data: bytes, cls: bytes) -> tuple[int, ...]:
    """Return the ASCII layout features, in the order of the ``W_*`` weights.

    Digit groups, punctuation outside rules, punctuation runs, rule characters, glued
    punctuation, newline runs, indents, spaces before digits. (Each group is skipped when
    its class is absent: short chat messages are the common case.)
    """
    digits = space_digit = runs = rule = glued = newlines = indents = 0
    if b"0" in cls:
        d = cls.translate(_ONLY_DIGIT)
        digits = d.count(b"0o") + d.endswith(b"0") + d.count(b"0000")
        space_digit = cls.count(b" 0")
    punct = cls.count(b".")
    if punct:
        p = cls.translate(_ONLY_PUNCT)
        runs = p.count(b".o") + p.endswith(b".")
        glued = cls.count(b".a") - cls.count(b"..a")
        # cl100k_base has single tokens for runs of up to 64 of these characters: a rule
        # costs one or two tokens whatever its length, not a fraction of a token per
        # character like other punctuation. Counted in groups of four.
        if b"...." in p:
            rule = 4 * sum(map(data.count, _RULES))
    if b"\n" in cls:
        n = cls.translate(_NEWLINE_VIEW)
        newlines = n.count(b"on") + n.startswith(b"n")
    if b"  " in cls:
        indents = cls.translate(_SPACE_VIEW).count(b"  o")
    return (digits, punct - rule, runs, rule, glued, newlines, indents, space_digit)


def _ascii_sum(data: bytes, cls: bytes) -> float:
    digits, punct, runs, rule, glued, newlines, indents, space_digit = _ascii_counts(data, cls)
    return (
        W_DIGITS * digits
        + W_PUNCT * punct
        + W_PUNCT_RUN * runs
        + W_RULE * rule
        + W_PUNCT_WORD * glued
        + W_NEWLINE * newlines
        + W_INDENT * indents
        + W_SPACE_DIGIT * space_digit
    )


def _script_counts(text: str, data: bytes) -> tuple[int, ...]:
    """Return the non-ASCII features, in the order of the ``W_*`` weights.

    One-token ideographs, other ideographs, one-token ideograph words, CJK punctuation, kana,
    hangul, Cyrillic, other letters, symbols, box drawing, ─/█ runs, four-byte characters.
    """
    leads = data.translate(_LEADS, _CONTINUATION)  # one byte per character
    cjk = leads.count(b"C")
    cjk_one = cjk_other = cjk_words = 0
    if cjk:
        cjk_one = len(_CJK_ONE_RE.findall(text))
        cjk_other = cjk - cjk_one
        words = _CJK_WORD_RE.findall(text)
        if words:
            # A word's ideographs are priced as the word (one token), not one by one.
            cjk_words = len(words)
            joined = "".join(words)
            in_words = len(_CJK_ONE_RE.findall(joined))
            cjk_one -= in_words
            cjk_other -= len(joined) - in_words
    cjk_punct = leads.count(b"F")
    symbols = leads.count(b"S")
    j = leads.count(b"J")
    kana = box = box_rule = 0
    if symbols:
        # Box drawing (U+2500–257F, E2 94/95 xx) costs about two tokens a character, except
        # runs of ─ (and of █, U+2588), which cl100k_base covers eight characters a token.
        dashes = 4 * data.count("────".encode())
        box = data.count(b"\xe2\x94") + data.count(b"\xe2\x95") - dashes
        box_rule = dashes + 4 * data.count("████".encode())
        symbols -= box + box_rule
    if j:
        # U+3000–303F (E3 80 xx) is CJK punctuation, U+3040–30FF (E3 81..83 xx) kana; the
        # rest of the E3 block (bopomofo, compatibility jamo, enclosed CJK) counts as symbols.
        punct = data.count(b"\xe3\x80")
        kana = data.count(b"\xe3\x81") + data.count(b"\xe3\x82") + data.count(b"\xe3\x83")
        cjk_punct += punct
        symbols += j - kana - punct
    hangul = cyrillic = letters = four_byte = 0
    if len(leads) - leads.count(b"-") > cjk + cjk_punct + symbols + kana + box + box_rule:
        hangul = leads.count(b"K")
        cyrillic = leads.count(b"R")
        letters = leads.count(b"L")
        four_byte = leads.count(b"E")
    return (
        cjk_one,
        cjk_other,
        cjk_words,
        cjk_punct,
        kana,
        hangul,
        cyrillic,
        letters,
        symbols,
        box,
        box_rule,
        four_byte,
    )


def _non_ascii_sum(text: str, data: bytes) -> float:
    one, other, words, punct, kana, hangul, cyr, letter, symbol, box, box_rule, emoji = (
        _script_counts(text, data)
    )
    return (
        W_CJK_ONE * one
        + W_CJK_OTHER * other
        + W_CJK_WORD * words
        + W_CJK_PUNCT * punct
        + W_KANA * kana
        + W_HANGUL * hangul
        + W_CYRILLIC * cyr
        + W_LETTER * letter
        + W_SYMBOL * symbol
        + W_BOX * box
        + W_BOX_RULE * box_rule
        + W_EMOJI * emoji
    )


FEATURES: Final = (
    "word",
    "split",
    "camel",
    "digits",
    "punct",
    "punct_run",
    "rule",
    "punct_word",
    "newline",
    "indent",
    "space_digit",
    "cjk_one",
    "cjk_other",
    "cjk_word",
    "cjk_punct",
    "kana",
    "hangul",
    "cyrillic",
    "letter",
    "symbol",
    "box",
    "box_rule",
    "emoji",
)
"""Names of the raw features, in the order of :func:`features` and of the ``W_*`` weights."""


def features(text: str) -> tuple[float, ...]:
    """The raw (unweighted) features of ``text`` in :data:`FEATURES` order (for fitting).

    ``estimate_tokens(text)`` is the rounded dot product of these with :func:`weights`.
    """
    words = _WORD_RE.findall(text)
    split = camel = 0.0
    for w in words:
        s, c = _word_parts(w)
        split += s
        camel += c
    data = text.encode("utf-8", "surrogatepass")
    ascii_part = _ascii_counts(data, data.translate(_CLASSES, _CONTINUATION))
    scripts = _script_counts(text, data) if not text.isascii() else (0,) * 12
    return (float(len(words)), split, camel, *map(float, ascii_part), *map(float, scripts))


def weights() -> tuple[float, ...]:
    """The fitted weights in :data:`FEATURES` order."""
    return (
        W_WORD, W_SPLIT, W_CAMEL, W_DIGITS, W_PUNCT, W_PUNCT_RUN, W_RULE, W_PUNCT_WORD,
        W_NEWLINE, W_INDENT, W_SPACE_DIGIT, W_CJK_ONE, W_CJK_OTHER, W_CJK_WORD, W_CJK_PUNCT,
        W_KANA, W_HANGUL, W_CYRILLIC, W_LETTER, W_SYMBOL, W_BOX, W_BOX_RULE, W_EMOJI,
    )  # fmt: skip
