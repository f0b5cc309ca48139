"""Summaries: one protocol, an extractive and an LLM summarizer, and durable jobs.

- :class:`Summarizer` — ``summarize_entry``, ``summarize_page``, ``page_title``,
  ``summarize_text``, ``handoff``;
- :class:`ExtractiveSummarizer` — no model, deterministic, fast enough for ``build``;
  the module-level :func:`summarize_entry`, :func:`summarize_page`, :func:`page_title`,
  :func:`summarize_text` and :func:`handoff` use one shared instance of it;
- :class:`LLMSummarizer` — through a :mod:`memci.llm` client, in the conversation's
  language, falling back to the extractive one on any model error; :func:`read_page`
  maps a model's page summary in any form (numbered, bullets, prose) onto the page;
- :func:`fit_sections` — the token budgeter's answer to overflow: summarize sections
  down to their share rather than drop them;
- :class:`JobQueue` — durable background jobs in the store (idempotent keys, leases,
  retries with backoff, one transaction per effect), worker threads, and
  :func:`run_worker` for a separate process;
- :class:`SummaryJobs` — page summaries for ``build``: the model's when ready, the
  extractive stand-in until then, never waiting.
"""

from typing import TYPE_CHECKING

from memci._lazy import lazy_names

if TYPE_CHECKING:
    from memci.summarize._budget import fit_sections, fit_tokens, water_fill
    from memci.summarize._default import (
        handoff,
        page_title,
        summarize_entry,
        summarize_page,
        summarize_text,
    )
    from memci.summarize._extractive import ExtractiveSummarizer
    from memci.summarize._jobs import (
        JOB_STATES,
        Effect,
        Handler,
        Job,
        JobCounts,
        JobQueue,
        RunReport,
        job_counts,
    )
    from memci.summarize._llm import LLMSummarizer, conversation_language
    from memci.summarize._pageanswer import pack_lines, read_page
    from memci.summarize._protocol import ENTRY_WIDTH, TITLE_WIDTH, Summarizer, TokenCounter
    from memci.summarize._tasks import (
        HANDOFF,
        SUMMARIZE_PAGE,
        SUMMARIZE_TEXT,
        PageSummary,
        SummaryJobs,
        default_summarizer,
        page_key,
        register_summary_handlers,
    )
    from memci.summarize._worker import run_worker
    from memci.text import cjk_share, is_cjk_text, split_sentences
else:
    # Each name loads with its module when first read (memci._lazy).
    __getattr__, __dir__ = lazy_names(__name__, {
        "memci.summarize._budget": ("fit_sections", "fit_tokens", "water_fill"),
        "memci.summarize._default": (
            "handoff", "page_title", "summarize_entry", "summarize_page", "summarize_text",
        ),
        "memci.summarize._extractive": ("ExtractiveSummarizer",),
        "memci.summarize._jobs": (
            "JOB_STATES", "Effect", "Handler", "Job", "JobCounts", "JobQueue", "RunReport",
            "job_counts",
        ),
        "memci.summarize._llm": ("LLMSummarizer", "conversation_language"),
        "memci.summarize._pageanswer": ("pack_lines", "read_page"),
        "memci.summarize._protocol": ("ENTRY_WIDTH", "TITLE_WIDTH", "Summarizer", "TokenCounter"),
        "memci.summarize._tasks": (
            "HANDOFF", "SUMMARIZE_PAGE", "SUMMARIZE_TEXT", "PageSummary", "SummaryJobs",
            "default_summarizer", "page_key", "register_summary_handlers",
        ),
        "memci.summarize._worker": ("run_worker",),
        "memci.text": ("cjk_share", "is_cjk_text", "split_sentences"),
    })

__all__ = [
    "ENTRY_WIDTH",
    "HANDOFF",
    "JOB_STATES",
    "SUMMARIZE_PAGE",
    "SUMMARIZE_TEXT",
    "TITLE_WIDTH",
    "Effect",
    "ExtractiveSummarizer",
    "Handler",
    "Job",
    "JobCounts",
    "JobQueue",
    "LLMSummarizer",
    "PageSummary",
    "RunReport",
    "Summarizer",
    "SummaryJobs",
    "TokenCounter",
    "cjk_share",
    "conversation_language",
    "default_summarizer",
    "fit_sections",
    "fit_tokens",
    "handoff",
    "is_cjk_text",
    "job_counts",
    "pack_lines",
    "page_key",
    "page_title",
    "read_page",
    "register_summary_handlers",
    "run_worker",
    "split_sentences",
    "summarize_entry",
    "summarize_page",
    "summarize_text",
    "water_fill",
]
