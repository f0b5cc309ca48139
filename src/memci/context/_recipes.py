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

from types import MappingProxyType
from typing import Literal

from memci._dataclasses import dataclass, field
from memci._records import NamedTuple
from memci.errors import ConfigError

__all__ = ["CHAT", "RECIPES", "TITLES", "TOOL_LOOP", "Recipe", "RecipeTitles", "choose_recipe"]

Section = Literal["fastmemo", "context_pool", "pins", "plan", "notebook"]


class Recipe(NamedTuple):
    """Which working-state sections a turn shows, in order, and how it shows tool output."""

    name: str
    sections: tuple[Section, ...]
    recent_steps: int  # tool-loop steps of the current page kept raw (0: all that fit)
    tool_head: bool  # the newest tool result shows the head of its output

    def without_pool(self) -> Recipe:
        """The recipe without the context pool (for a window that holds every page)."""
        return self._replace(sections=tuple(s for s in self.sections if s != "context_pool"))


CHAT = Recipe("chat", ("fastmemo", "context_pool", "pins", "notebook"), 0, False)
TOOL_LOOP = Recipe("tool_loop", ("fastmemo", "context_pool", "pins", "plan", "notebook"),
                   3, True)
RECIPES = MappingProxyType({"chat": CHAT, "tool_loop": TOOL_LOOP})


@dataclass(frozen=True, slots=True)
class RecipeTitles:
    """Titles of the state segment and of the tool contract."""

    state: str = "## Working state"
    retrieval: str = ("## Retrieved memory\n(found by memci in earlier conversations for the "
                      "user's message above; not written by the user)")
    contract_title: str = "## Tool contract"
    contract: str = (
        "Tool outputs are stored whole as artifacts. The context shows each as a short "
        "summary with its pointer artifact:<id> (the newest result also its head); read "
        "more of one with artifact_get or search it with grep."
    )
    extra: dict[str, str] = field(default_factory=dict)


TITLES = MappingProxyType({
    "en": RecipeTitles(),
    "zh": RecipeTitles(
        state="## 工作状态",
        retrieval="## 检索到的记忆\n（memci 为上面的用户消息从以往对话中找到的内容，不是用户所写）",
        contract_title="## 工具约定",
        contract=(
            "工具输出完整保存在证据库（artifact）中。上下文里每个输出只显示简短摘要和指针 "
            "artifact:<id>（最新一次结果还显示开头）；用 artifact_get 读取更多，或用 grep 搜索。"
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
