"""notebooks/recall_quality.ipynb runs top to bottom (nbclient) on a small subset.

A cell injected after the parameter cell narrows the run to one conversation
and a sample of its questions, with no ingest cache: the test checks that the
notebook works, not how long a full evaluation takes.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient


def test_notebook_is_committed_without_outputs(notebook_path: Path):
    nb = nbformat.read(notebook_path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(c.outputs == [] and c.execution_count is None for c in code)
    tagged = [c for c in code if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1 and "CONVERSATIONS = None" in tagged[0].source


def test_recall_quality_notebook_runs_on_a_subset(
    notebook_path: Path, locomo_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    nb = nbformat.read(notebook_path, as_version=4)
    index = next(i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", []))
    nb.cells.insert(index + 1, nbformat.v4.new_code_cell(
        f"DATA = {str(locomo_path)!r}\nCONVERSATIONS = 1\nQUESTIONS_PER_CONVERSATION = 25\n"
        "CACHE_DIR = None\nBOOTSTRAP = 100\nSHOW_FAILURES = 2\n"
    ))
    NotebookClient(nb, timeout=240, kernel_name="python3",
                   resources={"metadata": {"path": str(notebook_path.parent)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    text = "\n".join(
        o.get("text", "") if o.get("output_type") == "stream"
        else str(o.get("data", {}).get("text/markdown", ""))
        for o in outputs
    )
    assert "1 conversations" in text and "25 questions" in text
    assert "| `default` |" in text  # the comparison table
    assert "questions miss some evidence in the top 5" in text  # the failure browser ran
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) == 6  # recall@k, threshold, half-life, top-k, token budget, category
    # progress: one line per phase, no bar redraws (the plots' titles and axes are
    # checked on the plot functions, tests/eval/test_eval_plots.py)
    progress = "".join(o.get("text", "") for o in outputs
                       if o.get("output_type") == "stream" and o.get("name") == "stderr")
    ours = [line for line in progress.splitlines() if line.startswith(("ingest", "recall "))]
    assert ours and not [line for line in ours if "%|" in line or "\r" in line]
    assert len(progress.splitlines()) <= 20, progress
