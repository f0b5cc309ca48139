"""``memci ui``: the web inspector over a local store, in the browser (docs/inspector.md).

Registered on :data:`memci.cli.main` when this module is imported. It runs ``memci
serve``'s app on 127.0.0.1 only, without API keys (every request is ``--tenant``): a
server no other machine can reach needs none, as with ``memci serve --no-auth``. Once
the server answers, the inspector's address is printed and opened in the browser, where
the machine has one (``webbrowser``; ``--no-browser`` only prints it).
"""

from __future__ import annotations

import socket
import sys
import threading
import time
import webbrowser

import click
import httpx

from memci.cli import _DB_HELP, main
from memci.server import ServerConfig, serve

__all__ = ["ui_command"]

_HOST = "127.0.0.1"


def _free_port() -> int:
    """A port of 127.0.0.1 nobody listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((_HOST, 0))
        port: int = sock.getsockname()[1]
        return port


def _announce(url: str, browser: bool, waited: float = 60.0) -> None:
    """Once the server answers at ``url``: print the address, then open it if asked."""
    deadline = time.monotonic() + waited
    while time.monotonic() < deadline:
        try:
            if httpx.get(url.removesuffix("/ui") + "/healthz", timeout=2.0).status_code == 200:
                break
        except httpx.TransportError:
            time.sleep(0.1)
    else:
        return  # the server did not come up: it says why on its own
    print(f"memci ui: the inspector is at {url}", file=sys.stderr, flush=True)
    if browser and not webbrowser.open(url):
        print("memci ui: no browser found here; open the address above", file=sys.stderr,
              flush=True)


@main.command("ui")
@click.option("--db", default=None, help=_DB_HELP)
@click.option("--port", type=click.IntRange(0, 65535), default=0, show_default=True,
              help="Port on 127.0.0.1 (0: a free one; the address is printed).")
@click.option("--tenant", default="default", show_default=True,
              help="The tenant whose sessions the inspector shows.")
@click.option("--no-browser", is_flag=True,
              help="Print the inspector's address, do not open a browser.")
@click.option("--log-level", type=click.Choice(["critical", "error", "warning", "info",
                                                "debug"]), default="warning",
              show_default=True, help="uvicorn's log level.")
def ui_command(db: str | None, port: int, tenant: str, no_browser: bool, log_level: str) -> None:
    """Open the web inspector on a local store: sessions, what the next request holds, pages.

    Serves the inspector and the REST API on 127.0.0.1 only, without API keys (this
    machine's users only reach it), until interrupted; opens it in the browser unless
    --no-browser. For a shared server, `memci serve` serves the same inspector at /ui,
    behind its API keys.
    """
    chosen = port or _free_port()
    url = f"http://{_HOST}:{chosen}/ui"
    threading.Thread(target=_announce, args=(url, not no_browser), name="memci-ui",
                     daemon=True).start()
    serve(db, host=_HOST, port=chosen, log_level=log_level,
          config=ServerConfig.resolve(auth=False, default_tenant=tenant))
