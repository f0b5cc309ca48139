"""schemathesis, with its default checks, against a real ``memci serve`` on 127.0.0.1.

Every operation of ``/openapi.json`` (the proxies included, with a fake model on loopback
as their upstream) gets schema-valid and schema-breaking requests; every answer must be
what the document says: its status listed, its body and headers matching, no 5xx, valid
data accepted and invalid data refused. One test per operation, each bounded
(``EXAMPLES`` cases per mode, derandomized), so CI's budget
holds (about two minutes on a 2-core machine).

"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("schemathesis", reason="needs schemathesis (the dev extra)")
pytest.importorskip("fastapi", reason="needs memci[server]")

import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.config import SchemathesisConfig

import memci
from memci.server import KeyStore

from .fakellm import FakeLLM
from .test_server import ServeProcess

EXAMPLES = 25

# A conversation has rules JSON Schema cannot state: a tool message answers a call still
# open in the session, a role takes only some fields. Its operations may refuse a
# schema-valid conversation with 400 (what to fix); nothing else may.
CONVERSATIONS = SchemathesisConfig.from_str("""
[[operations]]
include-path-regex = "^/v1/(chat/completions|messages|sessions/[^/]+/messages)$"
include-method = "POST"
checks.positive_data_acceptance.expected-statuses = ["2XX", "400", "401", "403", "404", "409"]
""")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """A real server with a key, and a fake model as both proxies' upstream."""
    db: Path = tmp_path_factory.mktemp("conformance") / "api.db"
    with memci.Engine.open(db, workers=0) as engine:
        key = KeyStore(engine.store).create("acme")[1]
    with FakeLLM() as model, ServeProcess(
            db, "--upstream-base-url", model.openai_base_url, "--upstream-api-key", "up",
            "--upstream-anthropic-base-url", model.anthropic_base_url,
            "--upstream-anthropic-api-key", "up") as server:
        yield server.url, key


def _fuzz(operation: Any, mode: Any, url: str, headers: dict[str, str],
          failures: dict[str, list[str]]) -> int:
    """Run ``operation``'s cases of ``mode``; each failure's first line goes to ``failures``."""
    ran = 0

    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
              phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
    @given(case=operation.as_strategy(generation_mode=mode))
    def fuzz(case: Any) -> None:
        nonlocal ran
        ran += 1
        try:
            # A schema-breaking case may break the key headers themselves: what it drew
            # must reach the server then, not our valid key over it.
            sent = headers if mode == GenerationMode.POSITIVE else {**headers,
                                                                   **(case.headers or {})}
            case.call_and_validate(base_url=url, headers=sent, timeout=60)
        except (AssertionError, BaseExceptionGroup) as exc:  # schemathesis's failures
            found = failures.setdefault(f"{operation.label} ({mode.value})", [])
            found.append(str(exc)[:2000])

    try:
        fuzz()
    except Unsatisfiable:  # nothing breaks a schema that takes nothing (GET /healthz)
        assert mode == GenerationMode.NEGATIVE, operation.label
    return ran


def test_every_answer_is_what_the_document_says(served: tuple[str, str]) -> None:
    url, key = served
    # Both of the document's key schemes, with the same key (two different keys are a 401).
    headers = {"Authorization": f"Bearer {key}", "x-api-key": key}
    api = schemathesis.openapi.from_url(url + "/openapi.json", config=CONVERSATIONS)
    failures: dict[str, list[str]] = {}
    ran: dict[str, int] = {}
    for found in api.get_all_operations():
        operation = found.ok()
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            ran[operation.label] = ran.get(operation.label, 0) + _fuzz(
                operation, mode, url, headers, failures)
    assert not failures, "\n\n".join(f"{where}: {len(texts)} failing cases; the first:\n"
                                       f"{texts[0]}" for where, texts in failures.items())
    # every operation was reached, the proxies too
    assert {"POST /v1/chat/completions", "POST /v1/messages",
            "POST /v1/sessions/{sid}/messages"} <= set(ran), ran
    assert all(count >= 1 for count in ran.values()), ran
