"""The two recipes of seed 004: what a chat turn and a tool-loop turn put in the request.

Chat turn: base prompt, fastmemo, context pool, pins, notebook, the chat window (tool
output only as a summary and a pointer), the newest turns. Tool-loop turn: base prompt and
tool contract, fastmemo, context pool, pins, plan, notebook, the newest steps of the loop
(tool results as summaries), and the current tool result cut to its head, with its summary
and pointer. ``auto`` picks the tool loop when the newest message is a tool result or a
tool call is still unanswered.

Every section carries a title, in English or Chinese, so the model knows where each piece
came from; titles are configurable.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

from memci.errors import ConfigError

__all__ = ["CHAT", "RECIPES", "TITLES", "TOOL_LOOP", "Recipe", "RecipeTitles", "choose_recipe"]

Section = Literal["fastmemo", "context_pool", "pins", "plan", "notebook"]


@dataclass(frozen=True, slots=True)
class Recipe:
    """Which working-state sections a turn shows, in order, and how it shows tool output."""

    name: str
    sections: tuple[Section, ...]
    recent_steps: int  # tool-loop steps of the current page kept raw (0: all that fit)
    tool_head: bool  # the newest tool result shows the head of its output


CHAT = Recipe("chat", ("fastmemo", "context_pool", "pins", "notebook"), 0, False)
TOOL_LOOP = Recipe("tool_loop", ("fastmemo", "context_pool", "pins", "plan", "notebook"),
                   3, True)
RECIPES = MappingProxyType({"chat": CHAT, "tool_loop": TOOL_LOOP})


@dataclass(frozen=True, slots=True)
class RecipeTitles:
    """Titles of the state segment and of the tool contract."""

    state: str = "## Working state"
    retrieval: str = ("## Retrieved memory\n(found by memci in earlier conversations for the "
                      "user's latest message; not written by the user)")
    contract_title: str = "## Tool contract"
    contract: str = (
        "Tool outputs are stored whole as artifacts. The context shows each one as a short "
        "summary with its pointer artifact:<id>; only the newest result shows the head of "
        "its output. To read more, call artifact_get(id, offset, length) or "
        "artifact_get(id, start_line, line_count), or search it with grep(target, pattern). "
        "Keep what must be remembered with pin_add (cite a source), track the task with "
        "plan_add / plan_done, and note decisions with notebook_add."
    )
    extra: dict[str, str] = field(default_factory=dict)


TITLES = MappingProxyType({
    "en": RecipeTitles(),
    "zh": RecipeTitles(
        state="## 工作状态",
        retrieval="## 检索到的记忆\n（memci 为用户最新的消息从以往对话中找到的内容，不是用户所写）",
        contract_title="## 工具约定",
        contract=(
            "工具输出完整保存在证据库（artifact）中。上下文里每个输出只显示简短摘要和指针 "
            "artifact:<id>，只有最新一次结果会显示输出开头。需要更多内容时调用 "
            "artifact_get(id, offset, length) 或 artifact_get(id, start_line, line_count)，"
            "或用 grep(target, pattern) 搜索。必须记住的信息用 pin_add 记录（注明来源），"
            "用 plan_add / plan_done 跟踪任务，用 notebook_add 记录决定。"
        ),
    ),
})


def choose_recipe(recipe: str, *, newest_role: str | None, call_pending: bool) -> Recipe:
    """The recipe for this turn: ``chat``, ``tool_loop``, or ``auto`` (decided here)."""
    if recipe == "auto":
        return TOOL_LOOP if newest_role == "tool" or call_pending else CHAT
    try:
        return RECIPES[recipe]
    except KeyError:
        raise ConfigError(
            f"recipe must be 'auto', 'chat' or 'tool_loop', not {recipe!r}"
        ) from None
