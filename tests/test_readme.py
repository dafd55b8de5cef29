"""README.md and docs/measured.md: their figures are the benchmark results, and the README
links only inside the repository."""

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
    measured = (REPO / "docs" / "measured.md").read_text(encoding="utf-8")
    assert figures.updated(measured, figures.render_measured()) == measured, (
        "docs/measured.md's figures differ from benchmarks/results/*.json: "
        "run `python scripts/readme_figures.py`")
    assert figures.main(["--check"]) == 0


def test_the_readme_table_is_short_and_links_each_row_to_its_section():
    """Each cell of the README's table is a few words; the rest is on docs/measured.md, one
    section a row, which the row links to."""
    figures = _script()
    measured = figures.render_measured()
    table = figures.render().splitlines()[2:]
    assert len(table) == len(figures.rows())
    for row in table:
        cells = [c.strip() for c in row.strip("|").split(" | ")]
        assert len(cells) == 3, row
        for cell in cells:
            assert len(cell.split()) <= 25, cell
        anchor = cells[2].split("docs/measured.md#", 1)[1].rstrip(")")
        assert any(line.startswith("## ") and line[3:].lower().replace(" ", "-") == anchor
                   for line in measured.splitlines()), anchor


def test_the_table_follows_the_json(tmp_path: Path):
    figures = _script()
    results = tmp_path / "results"
    shutil.copytree(REPO / "benchmarks" / "results", results)
    path = results / "consolidation_scale.json"
    data = json.loads(path.read_text())
    data["expire"]["records_per_second"] = 12345
    path.write_text(json.dumps(data))
    assert "**12,345 records/s**" in figures.render(results)
    assert "**12,345 records/s**" in figures.render_measured(results)
    readme = tmp_path / "README.md"
    readme.write_text((REPO / "README.md").read_text())
    measured = tmp_path / "measured.md"
    measured.write_text((REPO / "docs" / "measured.md").read_text())
    looks = tmp_path / "first_looks.md"
    looks.write_text((REPO / "docs" / "first_looks.md").read_text())
    paths = ["--readme", str(readme), "--measured", str(measured), "--first-looks", str(looks),
             "--results", str(results)]
    assert figures.main(["--check", *paths]) == 1
    assert figures.main(paths) == 0
    assert "**12,345 records/s**" in readme.read_text()
    assert "**12,345 records/s**" in measured.read_text()
    assert figures.main(["--check", *paths]) == 0


def test_a_new_first_look_shows_in_the_summary_and_in_every_set(tmp_path: Path):
    figures = _script()
    results = tmp_path / "results"
    shutil.copytree(REPO / "benchmarks" / "results", results)
    last = figures.guard_looks(lambda name: json.loads((results / name).read_text()))
    n = int(last[-1][0].removeprefix("guard")) + 1
    path = results / figures.UPDATE_LOOKS
    looks = json.loads(path.read_text())
    look = json.loads(json.dumps(looks["sets"][f"guard{n - 1}"]))
    look["remember"]["all"]["old_first"] = 0.123
    # first in the file: the sets are read in numeric order, not in the file's order
    looks["sets"] = {f"guard{n}": look, **looks["sets"]}
    path.write_text(json.dumps(looks))
    assert f"the latest (guard{n}) 0.12" in figures.render(results)
    assert f"the latest (guard{n}, on the final code) **0.12**" in figures.render_measured(results)
    assert f"| guard{n} | 0.12 (" in figures.render_first_looks(results)


def _last_ten(values: list[float]) -> float:
    return sum(values[-10:]) / len(values[-10:])


def test_the_prose_on_the_blind_sets_says_what_their_first_looks_say():
    """README's "How well, honestly" puts the last ten first looks of each kind into words;
    a new first look that moves a mean out of its words fails here."""
    figures = _script()
    results = REPO / "benchmarks" / "results"

    def j(name: str) -> dict:
        return json.loads((results / name).read_text())

    text = " ".join((REPO / "README.md").read_text(encoding="utf-8").split())
    formation = _last_ten([x["all"]["changes_read_correctly"]
                           for _, x in figures.formation_looks(j)])
    updates = _last_ten([x["remember"]["default"]["all"]["newest_first"]
                         for _, x in figures.update_looks(j)])
    guards = _last_ten([x["remember"]["all"]["old_first"]
                        for _, x in figures.guard_looks(j)])
    contradictions = _last_ten([x["rules"]["all"]["recall"]
                                for _, x in figures.contradiction_looks(j)])
    claims = [("about three in four changes said in new words", formation, 0.70, 0.80),
              ("about two of three knowledge updates", updates, 0.60, 0.73),
              ("in about three of five", guards, 0.55, 0.65),
              ("find about half of the contradictions", contradictions, 0.42, 0.58)]
    for words, value, low, high in claims:
        assert words in text, words
        assert low <= value <= high, (words, round(value, 3))


def test_the_readme_links_only_inside_the_repository():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)\s]+)\)", text)
    assert targets
    for target in targets:
        assert not re.match(r"^[a-z]+:", target), f"external link {target}"
        path = (REPO / target.split("#")[0]).resolve()
        assert path.is_relative_to(REPO), f"{target} leaves the repository"
        assert path.exists(), f"{target} does not exist"
