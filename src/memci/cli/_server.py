"""The server commands: ``memci serve``, ``memci mcp`` and ``memci keys create|list|revoke``.

Registered on :data:`memci.cli.main` when this module is imported. The server parts need
their extras (``memci[server]``, ``memci[mcp]``); without them the command prints the pip
line to run and exits with status 2.
"""

from __future__ import annotations

import json

import click
from rich.console import Console
from rich.table import Table

from memci.cli import _DB_HELP, _engine, main
from memci.errors import ConfigError
from memci.server import KeyStore, ServerConfig, run_mcp, serve

__all__ = ["keys_group", "mcp_command", "serve_command"]

_LOOPBACK = ("127.0.0.1", "localhost", "::1")


@main.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on (127.0.0.1: this machine only).")
@click.option("--port", type=click.IntRange(0, 65535), default=8080, show_default=True,
              help="Port to listen on (0: pick a free one; the address is printed).")
@click.option("--db", default=None, help=_DB_HELP)
@click.option("--synchronous", type=click.Choice(["FULL", "NORMAL"], case_sensitive=False),
              default="FULL", show_default=True,
              help="SQLite durability: FULL survives power loss; NORMAL (faster) survives "
                   "a killed process, not a power cut.")
@click.option("--no-auth", is_flag=True,
              help="Serve without API keys, as tenant 'default' (loopback hosts only).")
@click.option("--max-body-bytes", type=click.IntRange(min=1024), default=None,
              help="Largest request body accepted; larger ones get 413 (default 16 MiB, "
                   "or $MEMCI_SERVER_MAX_BODY_BYTES).")
@click.option("--upstream-base-url", default=None,
              help="Base URL of the model the proxy calls, e.g. https://api.openai.com/v1 "
                   "(default: $MEMCI_UPSTREAM_BASE_URL).")
@click.option("--upstream-api-key", default=None,
              help="API key sent to the upstream model (default: $MEMCI_UPSTREAM_API_KEY).")
@click.option("--upstream-anthropic-base-url", default=None,
              help="Base URL of the Anthropic model behind /v1/messages, e.g. "
                   "https://api.anthropic.com (default: $MEMCI_UPSTREAM_ANTHROPIC_BASE_URL).")
@click.option("--upstream-anthropic-api-key", default=None,
              help="API key sent to the Anthropic upstream (default: "
                   "$MEMCI_UPSTREAM_ANTHROPIC_API_KEY).")
@click.option("--upstream-timeout", type=click.FloatRange(min=0.1), default=None,
              help="Seconds to wait for the upstream model (default 120).")
@click.option("--max-tool-rounds", type=click.IntRange(1, 64), default=None,
              help="Rounds of memci's own tools the proxy runs per request (default 8).")
@click.option("--log-level", type=click.Choice(["critical", "error", "warning", "info",
                                                "debug"]), default="warning",
              show_default=True, help="uvicorn's log level.")
def serve_command(
    host: str, port: int, db: str | None, synchronous: str, no_auth: bool,
    max_body_bytes: int | None,
    upstream_base_url: str | None, upstream_api_key: str | None,
    upstream_anthropic_base_url: str | None, upstream_anthropic_api_key: str | None,
    upstream_timeout: float | None, max_tool_rounds: int | None, log_level: str,
) -> None:
    """Serve the REST API and the OpenAI- and Anthropic-compatible proxies over HTTP.

    Sessions, messages, context, search and memci's tools under /v1/sessions; the proxies
    at /v1/chat/completions (OpenAI) and /v1/messages (Anthropic); the OpenAPI schema at
    /openapi.json. Requests need an API key
    from `memci keys create TENANT` unless --no-auth is given.
    """
    if no_auth and host not in _LOOPBACK:
        raise ConfigError(f"--no-auth is allowed only on a loopback host, not {host!r}")
    config = ServerConfig.resolve(
        auth=not no_auth, max_body_bytes=max_body_bytes, upstream_base_url=upstream_base_url,
        upstream_api_key=upstream_api_key,
        upstream_anthropic_base_url=upstream_anthropic_base_url,
        upstream_anthropic_api_key=upstream_anthropic_api_key, upstream_timeout=upstream_timeout,
        max_tool_rounds=max_tool_rounds)
    serve(db, host=host, port=port, config=config, log_level=log_level,
          synchronous=synchronous.upper())


@main.command("mcp")
@click.option("--session", "session", required=True,
              help="The memci session the MCP client works with (made if new).")
@click.option("--db", default=None, help=_DB_HELP)
@click.option("--tenant", default="default", show_default=True, help="The session's tenant.")
@click.option("--user", default=None, help="The session's user.")
def mcp_command(session: str, db: str | None, tenant: str, user: str | None) -> None:
    """Serve one session to an MCP client over standard input and output.

    Offers the tools add, build and search, and memci's own tools of the session
    (recall_page, pins, plan, artifact_get …). Configure it in an MCP client as the
    command `memci mcp --session NAME`.
    """
    run_mcp(db, session, tenant=tenant, user=user)


@main.group("keys")
def keys_group() -> None:
    """Make, list and revoke the API keys of `memci serve`.

    A key belongs to one tenant and sees only that tenant's sessions. Only a SHA-256
    hash of it is stored; the key itself is printed once, by `memci keys create`.
    """


@keys_group.command("create")
@click.argument("tenant")
@click.option("--label", default=None, help="A note to recognize the key by in `keys list`.")
@click.option("--db", default=None, help=_DB_HELP)
def keys_create(tenant: str, label: str | None, db: str | None) -> None:
    """Make an API key for TENANT and print it (as the last line, shown only once)."""
    with _engine(db) as engine:
        record, key = KeyStore(engine.store).create(tenant, label=label)
    click.echo(f"API key {record.key_id} for tenant {tenant!r} (store it now; it is not "
               "shown again):", err=False)
    click.echo(key)


@keys_group.command("list")
@click.option("--tenant", default=None, help="Only this tenant's keys.")
@click.option("--db", default=None, help=_DB_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print the keys as JSON.")
def keys_list(tenant: str | None, db: str | None, as_json: bool) -> None:
    """List the API keys: id, tenant, label, when made and when revoked (never the key)."""
    with _engine(db) as engine:
        keys = KeyStore(engine.store).keys(tenant)
    if as_json:
        click.echo(json.dumps([{"key_id": k.key_id, "tenant": k.tenant, "label": k.label,
                                "created_at": k.created_at, "revoked_at": k.revoked_at}
                               for k in keys], indent=2))
        return
    table = Table(title="memci API keys")
    for column in ("id", "tenant", "label", "created", "revoked"):
        table.add_column(column)
    for k in keys:
        table.add_row(k.key_id, k.tenant, k.label or "", k.created_at, k.revoked_at or "")
    Console().print(table)


@keys_group.command("revoke")
@click.argument("key_id")
@click.option("--db", default=None, help=_DB_HELP)
def keys_revoke(key_id: str, db: str | None) -> None:
    """Revoke the API key KEY_ID (as shown by `memci keys list`); it stops working at once."""
    with _engine(db) as engine:
        record = KeyStore(engine.store).revoke(key_id)
    click.echo(f"revoked {record.key_id} (tenant {record.tenant!r}) at {record.revoked_at}")
