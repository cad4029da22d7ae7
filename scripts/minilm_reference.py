#!/usr/bin/env python3
"""An independent reference for tests/embed_minilm.rs: all-MiniLM-L6-v2 written out in numpy.

It shares no code with capstore's embedder (candle, the `tokenizers` crate): the tokenizer is
BERT's basic tokenizer and greedy WordPiece over vocab.txt, the model is BERT's forward pass in
float64 from the raw safetensors bytes, then mean pooling and L2 normalisation as
sentence-transformers does. It prints each text's token ids, the first components of its vector
and the cosine matrix, the numbers tests/embed_minilm.rs asserts.

With `--linear8 SCHEME` it also runs the model with every linear layer's operands rounded to
8-bit integers as SCHEME says (the rest stays float64), over the texts above and the
sentence-transformers quickstart's three, and prints how far each cosine moves from the
unrounded model's: whether an 8-bit matrix product could keep the 1e-3 parity the embedder is
held to (BENCHMARKS.md, "Hybrid retrieval", "Cost"). SCHEME is one of
    q8_0      blocks of 32 numbers along the sum, both operands, a float16 scale per block
              (ggml's Q8_0, what candle's quantized matmul does)
    block32   the same with float32 scales; block16: blocks of 16
    channel   the weights per output row, the activations per token, one scale each
    weights   the weights per output row only; the activations stay float64

Needs numpy only (no torch, no transformers):
    python3 -m venv /tmp/ref && /tmp/ref/bin/pip install numpy
    /tmp/ref/bin/python scripts/minilm_reference.py "$(bash scripts/minilm.sh)" [--linear8 SCHEME]
"""

import json
import math
import struct
import sys
import unicodedata

import numpy as np

TEXTS = [
    "read_file: Read the complete contents of a file from the file system.",
    "List all files and directories in a given path.",
    "Send an e-mail message to a recipient, with a subject and body.",
    "What's the time in Tokyo right now?",
]
QUICKSTART = [
    "The weather is lovely today.",
    "It's so sunny outside!",
    "He drove to the stadium.",
]
MAX_TOKENS = 256


def load_weights(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        data = f.read()
    weights = {}
    for name, info in header.items():
        if name == "__metadata__" or info["dtype"] != "F32":
            continue
        start, end = info["data_offsets"]
        weights[name] = np.frombuffer(data[start:end], dtype="<f4").reshape(info["shape"]).astype(np.float64)
    return weights


def is_punctuation(ch):
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def basic_tokens(text):
    # BertNormalizer: clean text, lowercase and strip accents; BertPreTokenizer: split on
    # whitespace and punctuation. (No CJK handling: the texts here are ASCII.)
    text = "".join(" " if ch.isspace() else ch for ch in text if ord(ch) not in (0, 0xFFFD))
    text = unicodedata.normalize("NFD", text.lower())
    text = "".join(ch for ch in text if unicodedata.category(ch) != "Mn")
    words = []
    for word in text.split():
        current = ""
        for ch in word:
            if is_punctuation(ch):
                if current:
                    words.append(current)
                words.append(ch)
                current = ""
            else:
                current += ch
        if current:
            words.append(current)
    return words


def wordpiece(word, vocab):
    if len(word) > 100:
        return [vocab["[UNK]"]]
    ids, start = [], 0
    while start < len(word):
        end = len(word)
        while end > start:
            piece = word[start:end] if start == 0 else "##" + word[start:end]
            if piece in vocab:
                ids.append(vocab[piece])
                break
            end -= 1
        if end == start:
            return [vocab["[UNK]"]]
        start = end
    return ids


def tokenize(text, vocab):
    ids = [i for word in basic_tokens(text) for i in wordpiece(word, vocab)]
    return [vocab["[CLS]"]] + ids[: MAX_TOKENS - 2] + [vocab["[SEP]"]]


def layer_norm(x, w, b, eps=1e-12):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


erf = np.vectorize(math.erf)


def round8(a, block, scale_dtype=np.float64):
    """`a` (rows of numbers) rounded to 8-bit integers times one scale per `block` numbers of a
    row (`block` None: per row), symmetric: the scale maps the block's largest magnitude to 127."""
    rows = a.reshape(a.shape[0], -1, block or a.shape[1])
    scale = (np.abs(rows).max(-1, keepdims=True) / 127.0).astype(scale_dtype).astype(np.float64)
    ints = np.round(np.divide(rows, scale, out=np.zeros_like(rows), where=scale > 0))
    return (ints * scale).reshape(a.shape)


# How each `--linear8` scheme rounds (activations, weights) before their product.
SCHEMES = {
    "q8_0": (lambda h: round8(h, 32, np.float16), lambda w: round8(w, 32, np.float16)),
    "block32": (lambda h: round8(h, 32), lambda w: round8(w, 32)),
    "block16": (lambda h: round8(h, 16), lambda w: round8(w, 16)),
    "channel": (lambda h: round8(h, None), lambda w: round8(w, None)),
    "weights": (lambda h: h, lambda w: round8(w, None)),
}


def embed(ids, w, scheme=None):
    n = len(ids)
    x = w["embeddings.word_embeddings.weight"][ids]
    x = x + w["embeddings.position_embeddings.weight"][:n] + w["embeddings.token_type_embeddings.weight"][0]
    x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
    heads, size = 12, 32
    for layer in range(6):
        p = f"encoder.layer.{layer}."

        def linear(h, name):
            weight = w[p + name + ".weight"]
            if scheme is not None:
                h, weight = SCHEMES[scheme][0](h), SCHEMES[scheme][1](weight)
            return h @ weight.T + w[p + name + ".bias"]

        q, k, v = (linear(x, "attention.self." + m).reshape(n, heads, size).transpose(1, 0, 2) for m in ("query", "key", "value"))
        scores = q @ k.transpose(0, 2, 1) / math.sqrt(size)
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        probs = scores / scores.sum(-1, keepdims=True)
        context = (probs @ v).transpose(1, 0, 2).reshape(n, heads * size)
        x = layer_norm(linear(context, "attention.output.dense") + x, w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"])
        h = linear(x, "intermediate.dense")
        h = 0.5 * h * (1.0 + erf(h / math.sqrt(2.0)))
        x = layer_norm(linear(h, "output.dense") + x, w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"])
    mean = x.mean(0)
    return mean / np.linalg.norm(mean)


def main():
    usage = "usage: minilm_reference.py MODEL_DIR [--linear8 " + "|".join(SCHEMES) + "]"
    if len(sys.argv) not in (2, 4) or (len(sys.argv) == 4 and (sys.argv[2] != "--linear8" or sys.argv[3] not in SCHEMES)):
        sys.exit(usage)
    model = sys.argv[1]
    with open(f"{model}/vocab.txt", encoding="utf-8") as f:
        vocab = {line.rstrip("\n"): i for i, line in enumerate(f)}
    weights = load_weights(f"{model}/model.safetensors")
    vectors = []
    for text in TEXTS:
        ids = tokenize(text, vocab)
        vector = embed(ids, weights)
        vectors.append(vector)
        print(json.dumps(text), "ids", ids)
        print("  first 8:", ", ".join(f"{c:.6f}" for c in vector[:8]))
    matrix = np.array(vectors) @ np.array(vectors).T
    print("cosines:")
    for row in matrix:
        print("  [" + ", ".join(f"{c:.6f}" for c in row) + "],")
    if len(sys.argv) == 4:
        scheme = sys.argv[3]
        texts = TEXTS + QUICKSTART
        # The texts above are embedded already; only the quickstart's are new unrounded.
        exact = np.array(vectors + [embed(tokenize(t, vocab), weights) for t in QUICKSTART])
        rounded = np.array([embed(tokenize(t, vocab), weights, scheme) for t in texts])
        moved = np.abs(rounded @ rounded.T - exact @ exact.T)
        quick = slice(len(TEXTS), len(texts))
        print(f"8-bit linears ({scheme}): cosines moved by at most {moved.max():.6f}"
              f" (the quickstart's: {moved[quick, quick].max():.6f}); parity asks <= 0.001")


if __name__ == "__main__":
    main()
