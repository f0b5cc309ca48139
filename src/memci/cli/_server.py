"""The server commands: ``memci serve``, ``memci mcp``, ``memci keys create|list|policy|revoke``.

Registered on :data:`memci.cli.main` when this module is imported. The server parts need
their extras (``memci[server]``, ``memci[mcp]``); without them the command prints the pip
line to run and exits with status 2.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import click
from rich.console import Console

from memci.cli import _DB_HELP, _engine, main
from memci.cli._tables import print_table, table
from memci.errors import ConfigError
from memci.server import DEFAULT_MCP_SESSION, KeyPolicy, KeyStore, ServerConfig, run_mcp, serve
from memci.server._policy import guarded_paths

__all__ = ["keys_group", "mcp_command", "serve_command"]

_LOOPBACK = ("127.0.0.1", "localhost", "::1")

_ROOT = click.Path(exists=True, file_okay=False, resolve_path=True)
_FILE_ROOT_HELP = ("A directory the file tools (file_snippet, grep) may read; repeat for "
                   "more. It may not hold the memci store.")
_MESSAGE_BYTES_HELP = "Largest message a session accepts, in bytes (requests may lower it)."


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
@click.option("--artifacts-dir", default=None,
              help="Folder for large tool outputs, shared by every server of one store "
                   "(default: $MEMCI_ARTIFACTS_DIR; else in a PostgreSQL database, or "
                   "beside a SQLite file).")
@click.option("--max-body-bytes", type=click.IntRange(min=1024), default=None,
              help="Largest request body accepted; larger ones get 413 (default 16 MiB, "
                   "or $MEMCI_SERVER_MAX_BODY_BYTES).")
@click.option("--max-response-bytes", type=click.IntRange(min=65536), default=None,
              help="Byte budget of one page of a listing (messages, sessions, search hits): "
                   "a page stops before it and says where to continue; one item larger "
                   "comes alone (default 4 MiB).")
@click.option("--file-root", "file_roots", multiple=True, type=_ROOT,
              help=_FILE_ROOT_HELP + " The default of every tenant whose keys have no policy "
                                     "(default: none, or $MEMCI_SERVER_FILE_ROOTS).")
@click.option("--max-message-bytes", type=click.IntRange(min=1), default=None,
              help=_MESSAGE_BYTES_HELP + " Default of tenants without a key policy (default "
                                         "10 MiB, or $MEMCI_SERVER_MAX_MESSAGE_BYTES).")
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
@click.option("--header-timeout", type=click.FloatRange(min=0.1), default=None,
              help="Seconds a client has to send a request's line and headers, from "
                   "connecting or from the previous answer; then it is disconnected "
                   "(default 10).")
@click.option("--body-timeout", type=click.FloatRange(min=0.1), default=None,
              help="Seconds a client has to send a request's body after its headers, one "
                   "more for every 64 KiB that arrives; then it is disconnected (default 30).")
@click.option("--max-connections-per-client", type=click.IntRange(min=1), default=None,
              help="Connections one client address may hold; at the cap its connection "
                   "idle the longest is closed, else the new one gets 503 (default 128; "
                   "behind a proxy every client has the proxy's address).")
@click.option("--max-connections", type=click.IntRange(min=1), default=None,
              help="Connections the server holds in all (default: 256 below the "
                   "open-file limit, at most 10000).")
@click.option("--mcp-sessions-per-key", type=click.IntRange(min=1), default=None,
              help="MCP sessions (Mcp-Session-Id) one API key may hold open at /mcp; at the "
                   "cap its least recently used idle one is ended, else 429 (default 64).")
@click.option("--mcp-sessions-per-tenant", type=click.IntRange(min=1), default=None,
              help="MCP sessions all keys of one tenant may hold open (default 256).")
@click.option("--mcp-sessions", type=click.IntRange(min=1), default=None,
              help="MCP sessions the server holds open in all; bounds their memory (default "
                   "2048).")
@click.option("--mcp-idle-timeout", "mcp_idle_seconds", type=click.FloatRange(min=1),
              default=None,
              help="Seconds an MCP session may go without a request before it ends (default "
                   "1800).")
@click.option("--allowed-origin", "allowed_origins", multiple=True,
              help="A browser origin (scheme://host[:port]) whose pages may call the server; "
                   "repeat for more, '*' for any. Loopback origins always may; any other "
                   "Origin gets 403 (default: none, or $MEMCI_SERVER_ALLOWED_ORIGINS, "
                   "comma-separated).")
@click.option("--allowed-host", "allowed_hosts", multiple=True,
              help="A host name (or name:port) the server answers to at /mcp, and on every "
                   "route with --no-auth; repeat for more, '*' for any. Loopback names and "
                   "IP addresses always do; any other Host gets 421 (default: none, or "
                   "$MEMCI_SERVER_ALLOWED_HOSTS, comma-separated).")
@click.option("--log-level", type=click.Choice(["critical", "error", "warning", "info",
                                                "debug"]), default="warning",
              show_default=True, help="uvicorn's log level.")
def serve_command(
    host: str, port: int, db: str | None, synchronous: str, no_auth: bool,
    artifacts_dir: str | None, max_body_bytes: int | None, max_response_bytes: int | None,
    file_roots: tuple[str, ...],
    max_message_bytes: int | None,
    upstream_base_url: str | None, upstream_api_key: str | None,
    upstream_anthropic_base_url: str | None, upstream_anthropic_api_key: str | None,
    upstream_timeout: float | None, max_tool_rounds: int | None,
    header_timeout: float | None, body_timeout: float | None,
    max_connections_per_client: int | None, max_connections: int | None,
    mcp_sessions_per_key: int | None, mcp_sessions_per_tenant: int | None,
    mcp_sessions: int | None, mcp_idle_seconds: float | None,
    allowed_origins: tuple[str, ...], allowed_hosts: tuple[str, ...], log_level: str,
) -> None:
    """Serve the REST API and the OpenAI- and Anthropic-compatible proxies over HTTP.

    Sessions, messages, context, search and memci's tools under /v1/sessions; the proxies
    at /v1/chat/completions (OpenAI) and /v1/messages (Anthropic); MCP over Streamable HTTP
    at /mcp (with memci[mcp]; the session per connection in the X-Memci-Session header, or
    per call); the OpenAPI schema at /openapi.json. Requests need an API key
    from `memci keys create TENANT` unless --no-auth is given.

    What sessions may reach on this machine is the operator's to set, never a request's:
    --file-root and --max-message-bytes here (every tenant's default), or a tenant's key
    policy (`memci keys policy TENANT`). Browser pages may call it only from loopback
    origins and those of --allowed-origin; /mcp answers only loopback names, IP addresses
    and the names of --allowed-host (DNS rebinding).
    """
    if no_auth and host not in _LOOPBACK:
        raise ConfigError(f"--no-auth is allowed only on a loopback host, not {host!r}")
    config = ServerConfig.resolve(
        auth=not no_auth, max_body_bytes=max_body_bytes, max_response_bytes=max_response_bytes,
        upstream_base_url=upstream_base_url,
        file_roots=file_roots or None, max_message_bytes=max_message_bytes,
        upstream_api_key=upstream_api_key,
        upstream_anthropic_base_url=upstream_anthropic_base_url,
        upstream_anthropic_api_key=upstream_anthropic_api_key, upstream_timeout=upstream_timeout,
        max_tool_rounds=max_tool_rounds, header_timeout=header_timeout,
        body_timeout=body_timeout, max_connections_per_client=max_connections_per_client,
        max_connections=max_connections, mcp_sessions_per_key=mcp_sessions_per_key,
        mcp_sessions_per_tenant=mcp_sessions_per_tenant, mcp_sessions=mcp_sessions,
        mcp_idle_seconds=mcp_idle_seconds, allowed_origins=allowed_origins or None,
        allowed_hosts=allowed_hosts or None)
    serve(db, host=host, port=port, config=config, log_level=log_level,
          synchronous=synchronous.upper(), artifacts_dir=artifacts_dir)


@main.command("mcp")
@click.option("--session", "session", default=DEFAULT_MCP_SESSION, show_default=True,
              help="The memci session calls work in unless a call names another with its "
                   "'session' argument (made on first use).")
@click.option("--db", default=None, help=_DB_HELP)
@click.option("--tenant", default="default", show_default=True,
              help="The tenant of every session the client reaches.")
@click.option("--user", default=None, help="The user of sessions made here.")
def mcp_command(session: str, db: str | None, tenant: str, user: str | None) -> None:
    """Serve memci to an MCP client over standard input and output.

    Offers the tools add, build and search, and memci's own tools of the session
    (recall_page, pins, plan, artifact_get …). Every tool takes an optional 'session'
    argument, so one client can keep several conversations of the tenant; without it,
    calls go to --session ('default' unless given). Configure it in an MCP client as the
    command `memci mcp` (over HTTP: `memci serve` serves the same tools at /mcp).
    """
    run_mcp(db, session, tenant=tenant, user=user)


@main.group("keys")
def keys_group() -> None:
    """Make, list and revoke the API keys of `memci serve`, and set their tenant's policy.

    A key belongs to one tenant and sees only that tenant's sessions. Only a SHA-256
    hash of it is stored; the key itself is printed once, by `memci keys create`. A
    tenant's policy (file roots, largest message) is the operator's: no request widens it.
    """


def _policy(file_roots: tuple[str, ...], no_file_roots: bool,
            max_message_bytes: int | None) -> KeyPolicy | None:
    if file_roots and no_file_roots:
        raise click.UsageError("give --file-root or --no-file-roots, not both")
    if not (file_roots or no_file_roots or max_message_bytes):
        return None
    return KeyPolicy(file_roots=() if no_file_roots else (file_roots or None),
                     max_message_bytes=max_message_bytes)


def _describe(policy: KeyPolicy) -> str:
    if policy.empty:
        return "server defaults"
    parts = []
    if policy.file_roots is not None:
        parts.append("file roots: " + (", ".join(policy.file_roots) or "none"))
    if policy.max_message_bytes is not None:
        parts.append(f"max message bytes: {policy.max_message_bytes}")
    return "; ".join(parts)


def _policy_options(command: Callable[..., None]) -> Callable[..., None]:
    command = click.option("--max-message-bytes", type=click.IntRange(min=1), default=None,
                           help=_MESSAGE_BYTES_HELP)(command)
    command = click.option("--no-file-roots", is_flag=True,
                           help="No file access for the tenant, whatever the server's "
                                "default roots.")(command)
    return click.option("--file-root", "file_roots", multiple=True, type=_ROOT,
                        help=_FILE_ROOT_HELP + " Replaces the server's --file-root for "
                                               "this tenant.")(command)


@keys_group.command("create")
@click.argument("tenant")
@click.option("--label", default=None, help="A note to recognize the key by in `keys list`.")
@_policy_options
@click.option("--db", default=None, help=_DB_HELP)
def keys_create(tenant: str, label: str | None, file_roots: tuple[str, ...],
                no_file_roots: bool, max_message_bytes: int | None, db: str | None) -> None:
    """Make an API key for TENANT and print it (as the last line, shown only once).

    The key takes the policy of the tenant's other keys; --file-root and
    --max-message-bytes set one for a tenant that has none yet (change an existing one
    with `memci keys policy`).
    """
    with _engine(db) as engine:
        record, key = KeyStore(engine.store).create(
            tenant, label=label, policy=_policy(file_roots, no_file_roots, max_message_bytes),
            guarded=guarded_paths(engine))
    click.echo(f"API key {record.key_id} for tenant {tenant!r} ({_describe(record.policy)}); "
               "store it now, it is not shown again:", err=False)
    click.echo(key)


@keys_group.command("policy")
@click.argument("tenant")
@_policy_options
@click.option("--reset", is_flag=True, help="Drop the tenant's policy: the server's defaults "
                                             "apply again.")
@click.option("--db", default=None, help=_DB_HELP)
def keys_policy(tenant: str, file_roots: tuple[str, ...], no_file_roots: bool,
                max_message_bytes: int | None, reset: bool, db: str | None) -> None:
    """Show or set what TENANT's sessions may reach: file roots and the largest message.

    Without options, prints the policy. With them, sets it for every key of the tenant
    (options not given are taken from the server's defaults); a running server applies it
    within seconds. No request can widen it.
    """
    policy = _policy(file_roots, no_file_roots, max_message_bytes)
    with _engine(db) as engine:
        store = KeyStore(engine.store)
        if policy is None and not reset:
            if not store.keys(tenant):
                raise ConfigError(f"tenant {tenant!r} has no API keys")
            click.echo(f"{tenant}: {_describe(store.policy(tenant))}")
            return
        if policy is not None and reset:
            raise click.UsageError("give --reset alone")
        chosen = policy or KeyPolicy()
        count = store.set_policy(tenant, chosen, guarded=guarded_paths(engine))
    click.echo(f"{tenant}: {_describe(chosen)} ({count} key{'s' if count != 1 else ''})")


@keys_group.command("list")
@click.option("--tenant", default=None, help="Only this tenant's keys.")
@click.option("--db", default=None, help=_DB_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print the keys as JSON.")
def keys_list(tenant: str | None, db: str | None, as_json: bool) -> None:
    """List the API keys: id, tenant, label, policy, when made and revoked (never the key)."""
    with _engine(db) as engine:
        keys = KeyStore(engine.store).keys(tenant)
    if as_json:
        click.echo(json.dumps([{"key_id": k.key_id, "tenant": k.tenant, "label": k.label,
                                "created_at": k.created_at, "revoked_at": k.revoked_at,
                                "policy": json.loads(k.policy.to_json() or "{}")}
                               for k in keys], indent=2))
        return
    rows = [(k.key_id, k.tenant, k.label or "", _describe(k.policy), k.created_at,
             k.revoked_at or "") for k in keys]
    print_table(Console(), table("memci API keys", ("id", "tenant", "label", "policy",
                                                    "created", "revoked"), rows,
                                 whole=("id", "tenant")))


@keys_group.command("revoke")
@click.argument("key_id")
@click.option("--db", default=None, help=_DB_HELP)
def keys_revoke(key_id: str, db: str | None) -> None:
    """Revoke the API key KEY_ID (as shown by `memci keys list`); it stops working at once."""
    with _engine(db) as engine:
        record = KeyStore(engine.store).revoke(key_id)
    click.echo(f"revoked {record.key_id} (tenant {record.tenant!r}) at {record.revoked_at}")
