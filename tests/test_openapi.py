"""``/openapi.json`` is a valid OpenAPI document, and a real server answers as it says.

- the document passes openapi-spec-validator (OpenAPI 3.1): component names, every
  operation's statuses and bodies;
- a 405 names the methods its path takes (``Allow``), and a 401 says the server takes
  static API keys, not OAuth.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="needs memci[server]")

from fastapi.testclient import TestClient

import memci
from memci.server import ServerConfig, create_app


@pytest.fixture
def document(tmp_path: Path) -> dict[str, Any]:
    with memci.Engine.open(tmp_path / "doc.db") as engine, TestClient(
            create_app(engine)) as http:
        answer = http.get("/openapi.json")
        assert answer.status_code == 200
        return dict(answer.json())


def test_the_document_is_valid_openapi(document: dict[str, Any]) -> None:
    validator = pytest.importorskip("openapi_spec_validator",
                                    reason="needs openapi-spec-validator (the dev extra)")
    validator.validate(document)
    assert document["openapi"].startswith("3.1")


def test_every_operation_documents_its_errors_and_bodies(document: dict[str, Any]) -> None:
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            answers = operation["responses"]
            assert {"403", "413", "421", "500"} <= set(answers), (method, path)  # any
            if path.startswith("/v1/"):
                assert {"400", "401", "503"} <= set(answers), (method, path)
            for status, answer in answers.items():
                if status.startswith(("4", "5")):
                    assert "ErrorAnswer" in json.dumps(answer), (method, path, status)
            if method in ("post", "put", "patch"):
                assert operation["requestBody"]["content"]["application/json"]["schema"], \
                    (method, path)
    for proxy in ("/v1/chat/completions", "/v1/messages"):
        operation = document["paths"][proxy]["post"]
        assert {"400", "401", "502", "503", "504", "default"} <= set(operation["responses"])
        assert "text/event-stream" in operation["responses"]["200"]["content"]
        (session,) = [p for p in operation["parameters"] if p["name"] == "X-Memci-Session"]
        assert session["required"] is True
        body = json.dumps(operation["requestBody"])
        assert "Request" in body and operation["requestBody"]["required"] is True


def test_405_names_the_allowed_methods_and_401_says_static_keys(tmp_path: Path) -> None:
    with memci.Engine.open(tmp_path / "a.db") as engine, TestClient(
            create_app(engine)) as http:
        answer = http.request("TRACE", "/v1/sessions")
        assert answer.status_code == 405
        assert answer.headers["allow"] == "GET"
        assert answer.json()["error"]["code"] == "method_not_allowed"
        refused = http.get("/v1/sessions")
        assert refused.status_code == 401
        challenge = refused.headers["www-authenticate"]
        assert challenge.startswith('Bearer realm="memci"') and "not OAuth" in challenge
        assert "error=" not in challenge  # no credential was sent (RFC 6750 3.1)
        assert "static API keys" in refused.json()["error"]["message"]
        wrong = http.get("/v1/sessions", headers={"Authorization": "Bearer mk_nope"})
        assert 'error="invalid_token"' in wrong.headers["www-authenticate"]


def test_the_document_is_never_looser_than_the_server(document: dict[str, Any],
                                                      tmp_path: Path) -> None:
    """What the server always refuses, the document refuses too (schemathesis trusts it)."""
    jsonschema = pytest.importorskip("jsonschema")
    components = document["components"]["schemas"]

    def valid(route: str, value: Any) -> bool:
        body = document["paths"][f"/v1/sessions/{{sid}}/{route}"]["post"]["requestBody"]
        schema = {**body["content"]["application/json"]["schema"],
                  "components": {"schemas": components}}
        checker = jsonschema.Draft202012Validator(
            schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
        return bool(checker.is_valid(value))

    refused = [("messages", {"role": "user", "content": "x", "created_at": 1e300}),
               ("messages", {"role": "user", "content": "x", "created_at": -1e12}),
               ("messages", {"role": "user", "content": "x", "created_at": "yesterday"}),
               ("context", {"budget": 1}), ("context", {"budget": 2})]
    with memci.Engine.open(tmp_path / "strict.db") as engine, TestClient(
            create_app(engine, ServerConfig(auth=False)), base_url="http://127.0.0.1") as http:
        assert http.post("/v1/sessions/s/messages",
                         json={"role": "user", "content": "hi"}).status_code == 200
        for route, body in refused:
            answer = http.post(f"/v1/sessions/s/{route}", json=body)
            assert answer.status_code == 400, body  # the server refuses
            assert not valid(route, body), body  # and so does the document
        assert valid("messages", {"role": "user", "content": "x",
                                  "created_at": "2026-11-27T10:00:00Z"})
        assert valid("context", {"budget": 3})
