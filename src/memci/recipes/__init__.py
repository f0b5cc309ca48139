"""Recipes: the chat turn and the tool-loop turn of seed 004, with titled sections."""

from memci.recipes._recipes import (
    CHAT,
    RECIPES,
    TITLES,
    TOOL_LOOP,
    Recipe,
    RecipeTitles,
    choose_recipe,
)

__all__ = ["CHAT", "RECIPES", "TITLES", "TOOL_LOOP", "Recipe", "RecipeTitles", "choose_recipe"]
