"""The OpenAI-compatible embedders: ``POST {base_url}/embeddings``, blocking and asyncio.

Apart from :mod:`memci.memory._embed` because they import httpx: ``memci.memory`` names
them lazily, and :func:`~memci.memory.embedder_from_env` imports this module only for an
``openai:`` embedder, so a process that embeds locally or not at all never loads httpx.
Both embedders make the same requests and read the replies the same way (the shared
part is :class:`_OpenAIEmbeddings`); only the I/O is each one's own.
"""

from __future__ import annotations

from collections.abc import Sequence

import httpx

from memci.errors import LLMConnectionError, LLMHTTPError, LLMResponseError, LLMTimeoutError
from memci.memory._embed import unit

__all__ = ["AsyncOpenAIEmbedder", "OpenAIEmbedder"]


class _OpenAIEmbeddings:
    """What both OpenAI embedders share: settings, batches, the request and the reply."""

    def __init__(self, model: str, *, base_url: str, api_key: str | None,
                 batch_size: int) -> None:
        self.model = model
        self.name = f"openai:{model}"
        self.languages: frozenset[str] | None = None
        self.base_url = base_url.rstrip("/")
        self.batch_size = batch_size
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}

    @property
    def _url(self) -> str:
        return f"{self.base_url}/embeddings"

    def _batches(self, texts: Sequence[str]) -> list[list[str]]:
        return [list(texts[start:start + self.batch_size])
                for start in range(0, len(texts), self.batch_size)]

    def _failure(self, exc: httpx.HTTPError) -> Exception:
        if isinstance(exc, httpx.TimeoutException):
            return LLMTimeoutError(f"embeddings endpoint {self._url} timed out")
        return LLMConnectionError(f"cannot reach the embeddings endpoint {self._url}: {exc}")

    def _vectors(self, reply: httpx.Response, texts: list[str]) -> list[list[float]]:
        if reply.status_code >= 400:
            raise LLMHTTPError(f"embeddings endpoint {self._url} failed",
                               status=reply.status_code, body=reply.text)
        try:
            data = reply.json()["data"]
            rows = sorted(data, key=lambda d: int(d.get("index", 0)))
            vectors = [unit([float(x) for x in row["embedding"]]) for row in rows]
        except (ValueError, KeyError, TypeError) as exc:
            raise LLMResponseError("embeddings reply cannot be read", body=reply.text) from exc
        if len(vectors) != len(texts):
            raise LLMResponseError(f"embeddings reply has {len(vectors)} vectors for "
                                   f"{len(texts)} texts", body=reply.text[:2000])
        return vectors


class OpenAIEmbedder(_OpenAIEmbeddings):
    """An OpenAI-compatible ``POST {base_url}/embeddings`` endpoint."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str = "https://api.openai.com/v1",
        api_key: str | None = None,
        http_client: httpx.Client | None = None,
        batch_size: int = 64,
        timeout: float = 60.0,
    ) -> None:
        super().__init__(model, base_url=base_url, api_key=api_key, batch_size=batch_size)
        self._client = http_client or httpx.Client(timeout=timeout)
        self._owns_client = http_client is None

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed ``texts``, ``batch_size`` per request, normalized."""
        out: list[list[float]] = []
        for batch in self._batches(texts):
            try:
                reply = self._client.post(self._url, json={"model": self.model, "input": batch},
                                          headers=self._headers)
            except httpx.HTTPError as exc:
                raise self._failure(exc) from exc
            out.extend(self._vectors(reply, batch))
        return out

    def close(self) -> None:
        """Close the connection pool this embedder opened (an injected one is left open)."""
        if self._owns_client:
            self._client.close()


class AsyncOpenAIEmbedder(_OpenAIEmbeddings):
    """:class:`OpenAIEmbedder` for asyncio, over ``httpx.AsyncClient``: ``await embed(...)``.

    The same requests and the same reading of replies; only the I/O is its own.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str = "https://api.openai.com/v1",
        api_key: str | None = None,
        http_client: httpx.AsyncClient | None = None,
        batch_size: int = 64,
        timeout: float = 60.0,
    ) -> None:
        super().__init__(model, base_url=base_url, api_key=api_key, batch_size=batch_size)
        self._client = http_client or httpx.AsyncClient(timeout=timeout)
        self._owns_client = http_client is None

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed ``texts``, ``batch_size`` per request, normalized."""
        out: list[list[float]] = []
        for batch in self._batches(texts):
            try:
                reply = await self._client.post(
                    self._url, json={"model": self.model, "input": batch},
                    headers=self._headers)
            except httpx.HTTPError as exc:
                raise self._failure(exc) from exc
            out.extend(self._vectors(reply, batch))
        return out

    async def aclose(self) -> None:
        """Close the connection pool this embedder opened (an injected one is left open)."""
        if self._owns_client:
            await self._client.aclose()
