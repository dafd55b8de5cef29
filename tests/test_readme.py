"""README.md: its figures are the benchmark results, and it links only inside the repository."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[1]


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "readme_figures", REPO / "scripts" / "readme_figures.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_figures_table_is_what_the_benchmark_results_render():
    figures = _script()
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert figures.updated(text, figures.render()) == text, (
        "README.md's figures differ from benchmarks/results/*.json: "
        "run `python scripts/readme_figures.py`")
    assert figures.main(["--check"]) == 0


def test_the_table_follows_the_json(tmp_path: Path):
    figures = _script()
    results = tmp_path / "results"
    shutil.copytree(REPO / "benchmarks" / "results", results)
    path = results / "consolidation_scale.json"
    data = json.loads(path.read_text())
    data["expire"]["records_per_second"] = 12345
    path.write_text(json.dumps(data))
    assert "**12,345 records/s**" in figures.render(results)
    readme = tmp_path / "README.md"
    readme.write_text((REPO / "README.md").read_text())
    assert figures.main(["--check", "--readme", str(readme), "--results", str(results)]) == 1
    assert figures.main(["--readme", str(readme), "--results", str(results)]) == 0
    assert "**12,345 records/s**" in readme.read_text()
    assert figures.main(["--check", "--readme", str(readme), "--results", str(results)]) == 0


def test_the_readme_links_only_inside_the_repository():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)\s]+)\)", text)
    assert targets
    for target in targets:
        assert not re.match(r"^[a-z]+:", target), f"external link {target}"
        path = (REPO / target.split("#")[0]).resolve()
        assert path.is_relative_to(REPO), f"{target} leaves the repository"
        assert path.exists(), f"{target} does not exist"
