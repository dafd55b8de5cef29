"""The trainer's threshold sweeps share the encoder's outputs between their points.

Each point of a sweep is a reader of the same model with other thresholds; the encoder's
outputs for a text do not depend on them, so ``sweep_readers`` keeps them in one store and
the encoder runs once a text instead of once a text and a point (the checker's and the
detector's sweeps took 45 minutes of a training run that way). What must hold: every point
reads exactly as a reader of its own would.
"""

from __future__ import annotations

import pytest

from memstrata.reading import Held, ModelReader
from memstrata.reading.score import score_changes, score_lines
from memstrata.reading.train import DATA, is_dev, load_changes, load_lines, sweep_readers

#: (check_threshold, check_above, detect_veto, detect_words): a loose and a strict point
POINTS = [(0.05, 0.9, 0.2, 0.01), (0.3, 0.99, 0.3, 0.3)]


@pytest.fixture(scope="module")
def dev() -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    lines = [x for x in load_lines(sorted(DATA.glob("read_v6*.jsonl")))
             if is_dev(str(x["id"])) and x["task"] == "read"][:30]
    changes = [c for c in load_changes(["read_blind33.jsonl"]) if is_dev(str(c["id"]))][:24]
    assert len(lines) == 30 and len(changes) >= 8
    return lines, changes


def _set(reader: ModelReader, point: tuple[float, float, float, float]) -> ModelReader:
    reader.check_threshold, reader.check_above = point[0], point[1]
    reader.detect_veto, reader.detect_words = point[2], point[3]
    return reader


def test_every_point_of_a_sweep_reads_as_a_reader_of_its_own(
        dev: tuple[list[dict[str, object]], list[dict[str, object]]]) -> None:
    lines, changes = dev
    make = sweep_readers(ModelReader().path)
    for point in POINTS:
        shared, own = _set(make(), point), _set(ModelReader(), point)
        assert score_lines(shared, lines) == score_lines(own, lines)
        assert score_changes(shared, changes) == score_changes(own, changes)
        turn = str(changes[0]["statement"])
        held = [Held(str(changes[0]["attribute"]), "something else")]
        assert shared.read(turn, held) == own.read(turn, held)


def test_the_points_share_one_store_and_no_reader_can_change_it() -> None:
    store: dict[tuple[tuple[int, ...], ...], list[object]] = {}
    first, second = ModelReader(), ModelReader()
    first.share_encodings(store)  # type: ignore[arg-type]
    second.share_encodings(store)  # type: ignore[arg-type]
    first.read("i moved to porto last week")
    kept = len(store)
    assert kept >= 1
    second.read("i moved to porto last week")
    assert len(store) == kept  # read from the store, not encoded again
    hidden = next(iter(store.values()))[0]
    with pytest.raises(ValueError, match="read-only"):
        hidden[0, 0] = 1.0  # type: ignore[index]
