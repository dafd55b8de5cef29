"""Make the ONNX export of the embedding model now, instead of on first use.

``python -m memstrata.memory.export`` (``scripts/setup.sh`` runs it) loads the model
with sentence-transformers, exports it, checks it against PyTorch and caches it
(:mod:`memstrata.memory._onnx`), so that no later process imports torch. An export that
is already cached and passes its checks is kept. Exit status 0 when a verified export
is cached, 1 when there is none (the embedder then runs on PyTorch; nothing breaks).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    from memstrata.memory import _onnx
    from memstrata.memory._onnx_embedder import read_spec
    from memstrata.memory._st_embedder import SentenceTransformerEmbedder, packaged_model_path

    parser = argparse.ArgumentParser(prog="python -m memstrata.memory.export",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=None,
                        help="a sentence-transformers model folder (default: the packaged "
                             "all-MiniLM-L6-v2)")
    parser.add_argument("--cache-dir", type=Path, default=None,
                        help=f"where exports are cached (default: {_onnx.default_cache_dir()})")
    args = parser.parse_args(argv)
    model = args.model or packaged_model_path()
    cache = args.cache_dir or _onnx.default_cache_dir()
    if read_spec(model) is None:
        print(f"export: {model} is not a Transformer -> mean Pooling model; "
              "it runs on PyTorch", file=sys.stderr)
        return 1
    embedder = SentenceTransformerEmbedder(args.model, onnx_cache_dir=cache)
    if not embedder.uses_onnx:
        print(f"export: no verified ONNX export in {cache}; the embedder runs on PyTorch",
              file=sys.stderr)
        return 1
    print(f"export: verified ONNX export of {model.name} cached in {cache}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
