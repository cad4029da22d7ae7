"""MiniLm: embedding, hybrid selection, and the GIL released while the model runs."""

from __future__ import annotations

import math
import threading
import time

import pytest

import capstore


def test_embed(minilm: capstore.MiniLm) -> None:
    assert minilm.model_id == "sentence-transformers/all-MiniLM-L6-v2"
    assert minilm.dimensions == 384
    vectors = minilm.embed(["read a file", "list a directory", "read a file"])
    assert len(vectors) == 3 and all(len(v) == 384 for v in vectors)
    assert all(math.isclose(math.fsum(x * x for x in v), 1.0, rel_tol=1e-4) for v in vectors)
    assert vectors[0] == vectors[2]
    assert minilm(["read a file"]) == [vectors[0]]
    assert minilm.embed_one("read a file") == vectors[0]
    assert minilm.embed([]) == []
    with pytest.raises(TypeError):
        minilm.embed("a string is not a list of texts")  # type: ignore[arg-type]


def test_hybrid_finds_a_paraphrase(minilm: capstore.MiniLm) -> None:
    store = capstore.Store.bundled()
    message = "what VMs have we got in eu-west-1?"
    assert "cloud/list_instances" not in store.select(message).names  # BM25 alone misses it
    hybrid = store.select(message, embedder=minilm, lexical_weight=0.5)
    assert "cloud/list_instances" in hybrid.names
    tool = next(t for t in hybrid if t.name == "cloud/list_instances")
    assert any("cosine" in r for r in tool.reasons), tool.reasons
    # The default fusion curve, and a conversation, work the same way.
    assert store.select(message, embedder=minilm).names
    conversation = store.conversation(embedder=minilm, lexical_weight=0.5)
    assert "cloud/list_instances" in conversation.select(message).names
    # Tools added later are embedded before the next hybrid selection.
    store.add_tools([{"name": "spin_up_server", "description": "Provision a new virtual machine", "inputSchema": {"type": "object"}}])
    assert "spin_up_server" in store.select("create a VM for me", embedder=minilm, lexical_weight=0.2).names


def test_load_errors() -> None:
    with pytest.raises(capstore.EmbedError, match="cannot load the embedding model at /no/such/dir"):
        capstore.MiniLm("/no/such/dir")


def test_the_gil_is_released_while_embedding(minilm: capstore.MiniLm) -> None:
    texts = [f"text number {i} about files, weather and calendars" for i in range(400)]
    done = threading.Event()
    worker = threading.Thread(target=lambda: (minilm.embed(texts), done.set()))
    spins = 0
    started = time.perf_counter()
    worker.start()
    time.sleep(0.01)  # the worker is inside embed by now
    while not done.is_set():
        spins += 1
    worker.join()
    elapsed = time.perf_counter() - started
    assert elapsed > 0.1, "the batch was too small to tell"
    # With the GIL held for the whole batch this loop would hardly run at all.
    assert spins > 10_000, (spins, elapsed)
