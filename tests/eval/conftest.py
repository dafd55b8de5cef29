"""Fixtures of the evaluation tests: tiny hand-made datasets in both formats.

The JSONL conversation is written so that the right answer is unambiguous for
a human and findable by words or meaning, and it contains the awkward cases:
an exact duplicate turn (merged by the write policy), small talk (dropped by
the production write policy) that holds evidence, and a second user whose
turns must never answer the first user's questions.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def locomo_path() -> Path:
    """The LoCoMo development file (outside the repo; ``MEMSTRATA_LOCOMO`` overrides)."""
    default = REPO.parent / "shared" / "data" / "locomo" / "locomo_dev.json"
    path = Path(os.environ.get("MEMSTRATA_LOCOMO", default))
    if not path.is_file():
        pytest.fail(f"LoCoMo development data not found at {path}; set MEMSTRATA_LOCOMO")
    return path


@pytest.fixture
def notebook_path() -> Path:
    return REPO / "notebooks" / "recall_quality.ipynb"


def _turn(user: str, session: str, time: str, speaker: str, text: str, **extra: Any
          ) -> dict[str, Any]:
    return {"user": user, "session": session, "time": time, "speaker": speaker, "text": text,
            **extra}


TINY_TURNS = [
    _turn("ana", "s1", "2024-03-01T09:00:00Z", "Ana", "Hi Ben! How are you?"),
    _turn("ana", "s1", "2024-03-01T09:00:05Z", "Ben", "Good! What did you do last weekend?"),
    _turn("ana", "s1", "2024-03-01T09:00:10Z", "Ana",
          "I adopted a grey cat from the shelter and named her Pixel."),
    _turn("ana", "s1", "2024-03-01T09:00:15Z", "Ben", "That is lovely, congratulations!"),
    _turn("ana", "s1", "2024-03-01T09:00:20Z", "Ana", "Thanks!"),
    _turn("ana", "s2", "2024-04-10T18:00:00Z", "Ana",
          "I started learning the cello at the community music school."),
    _turn("ana", "s2", "2024-04-10T18:00:05Z", "Ben", "Which piece are you practising?"),
    _turn("ana", "s2", "2024-04-10T18:00:10Z", "Ana",
          "A Bach prelude, slowly. My teacher Mrs Okafor is very patient."),
    _turn("ana", "s2", "2024-04-10T18:00:15Z", "Ana", "Thanks!"),
    _turn("ana", "s2", "2024-04-10T18:00:20Z", "Ben", "Good luck with the recital in June."),
    _turn("bo", "x", "2024-01-05T10:00:00Z", "Bo", "My dog Rex hates thunderstorms."),
    _turn("bo", "x", "2024-01-05T10:00:05Z", "Cy", "Poor Rex! Mine hides under the bed."),
    _turn("bo", "x", "2024-01-05T10:00:10Z", "Bo",
          "I am training for the Berlin marathon in September."),
]
TINY_PROBES = [
    {"user": "ana", "question": "What is the name of Ana's cat?", "evidence_ids": ["s1:3"],
     "category": "single-hop", "answer": "Pixel"},
    {"user": "ana", "question": "Which instrument is Ana learning?", "evidence_ids": ["s2:1"],
     "category": "single-hop", "answer": "cello"},
    {"user": "ana", "question": "Who teaches Ana and what does she play?",
     "evidence_ids": ["s2:3", "s2:1"], "category": "multi-hop"},
    {"user": "ana", "question": "What did Ana say after the congratulations?",
     "evidence_ids": ["s1:5", "nope:9"], "category": "single-hop"},
    {"user": "bo", "question": "Which marathon is Bo training for?", "evidence_ids": ["x:3"],
     "category": "single-hop", "answer": "Berlin"},
    {"user": "bo", "question": "A question with only unknown evidence",
     "evidence_ids": ["x:99"]},
]


@pytest.fixture
def tiny_jsonl(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.jsonl"
    lines = [json.dumps(x) for x in [*TINY_TURNS, *TINY_PROBES]]
    path.write_text("\n".join(lines) + "\n\n")
    return path


def tiny_locomo_samples() -> list[dict[str, Any]]:
    return [{
        "sample_id": "conv-a",
        "conversation": {
            "speaker_a": "Ana", "speaker_b": "Ben",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ana", "dia_id": "D1:1", "text": "Hey Ben, long time!"},
                {"speaker": "Ben", "dia_id": "D1:2", "text": "I ran a charity race for "
                 "mental health last Saturday.",
                 "blip_caption": "a photo of a medal on a table", "img_url": ["x"]},
                {"speaker": "Ana", "dia_id": "D1:3", "text": "Amazing, congrats!"},
            ],
            "session_2_date_time": "10:00 am on 20 June, 2023",
            "session_2": [
                {"speaker": "Ben", "dia_id": "D2:1", "text": "We went camping at the lake."},
                {"speaker": "Ana", "dia_id": "D2:2", "text": "Sounds relaxing."},
            ],
            "session_3_date_time": "10:00 am on 21 June, 2023",
        },
        "qa": [
            {"question": "What did Ben run for?", "answer": "mental health",
             "evidence": ["D1:2"], "category": 4},
            {"question": "Where did Ben camp?", "answer": "the lake",
             "evidence": ["D2:1; D1:2"], "category": 1},
            {"question": "What did Ben win?", "evidence": ["D1:2"], "category": 5,
             "adversarial_answer": "a trophy"},
            {"question": "Broken evidence", "answer": 3, "evidence": ["D:9:9", "D1:9"],
             "category": 2},
            {"question": "When did Ben camp?", "answer": 2023, "evidence": ["D2:1", "D7:7"],
             "category": 2},
        ],
    }]


@pytest.fixture
def tiny_locomo(tmp_path: Path) -> Path:
    path = tmp_path / "tiny_locomo.json"
    path.write_text(json.dumps(tiny_locomo_samples()))
    return path
