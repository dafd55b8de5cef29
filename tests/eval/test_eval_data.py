"""Loaders: LoCoMo JSON and memstrata JSONL, and their typed errors."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memstrata.errors import DatasetError, InvalidInputError
from memstrata.eval import load_dataset, load_jsonl, load_locomo


def test_locomo_loader_reads_turns_times_captions_and_skips_bad_evidence(tiny_locomo: Path):
    ds = load_locomo(tiny_locomo)
    assert ds.format == "locomo" and len(ds.conversations) == 1
    conv = ds.conversations[0]
    assert conv.user == "conv-a"
    assert [t.id for t in conv.turns] == ["D1:1", "D1:2", "D1:3", "D2:1", "D2:2"]
    race = conv.turn("D1:2")
    assert race.speaker == "Ben" and race.session == "1" and race.position == 1
    assert race.time == datetime(2023, 5, 8, 13, 56, 1, tzinfo=UTC)  # session + position s
    assert race.text.endswith("[shared a photo of a medal on a table]")
    assert conv.turn("D2:1").time == datetime(2023, 6, 20, 10, 0, tzinfo=UTC)
    # category 5 excluded; "D2:1; D1:2" split into two ids; a probe left with no
    # existing evidence excluded; unknown ids skipped and counted
    assert [p.question for p in conv.probes] == [
        "What did Ben run for?", "Where did Ben camp?", "When did Ben camp?"]
    assert conv.probes[1].evidence_ids == ("D2:1", "D1:2")
    assert conv.probes[2].evidence_ids == ("D2:1",) and conv.probes[2].answer == "2023"
    assert conv.probes[0].category == "4"
    report = ds.report
    assert report.probes_read == 5
    assert report.excluded_by_category == 1
    assert report.excluded_without_evidence == 1
    assert sorted(m.evidence_id for m in report.missing_evidence) == ["D1:9", "D7:7", "D:9:9"]
    assert ds.category_label("4") == "4 single-hop"
    assert ds.end_time == datetime(2023, 6, 20, 10, 0, 1, tzinfo=UTC)


def test_locomo_captions_can_be_left_out(tiny_locomo: Path):
    ds = load_locomo(tiny_locomo, include_captions=False)
    assert "[shared" not in ds.conversations[0].turn("D1:2").text
    assert load_locomo(tiny_locomo).fingerprint() != ds.fingerprint()


def test_jsonl_loader_defaults_ids_and_counts(tiny_jsonl: Path):
    ds = load_jsonl(tiny_jsonl)
    assert ds.format == "jsonl" and [c.user for c in ds.conversations] == ["ana", "bo"]
    ana = ds.conversations[0]
    assert [t.id for t in ana.turns][:3] == ["s1:1", "s1:2", "s1:3"]
    assert ana.turn("s2:1").text.startswith("I started learning the cello")
    assert ana.turn("s1:1").time == datetime(2024, 3, 1, 9, 0, tzinfo=UTC)
    assert len(ana.probes) == 4
    assert ana.probes[3].evidence_ids == ("s1:5",)  # "nope:9" skipped
    assert [p.id for p in ana.probes] == ["ana/q0", "ana/q1", "ana/q2", "ana/q3"]
    bo = ds.conversations[1]
    assert len(bo.probes) == 1  # the probe with only unknown evidence is excluded
    assert ds.report.excluded_without_evidence == 1
    assert [m.evidence_id for m in ds.report.missing_evidence] == ["nope:9", "x:99"]
    assert ds.n_turns == 13 and ds.n_probes == 5
    assert load_dataset(tiny_jsonl).fingerprint() == ds.fingerprint()


def test_jsonl_epoch_times_explicit_ids_and_category_exclusion(tmp_path: Path):
    path = tmp_path / "d.jsonl"
    rows = [
        {"user": "u", "session": 1, "time": 1_700_000_000, "text": "I live in Lyon",
         "id": "a"},
        {"user": "u", "session": 1, "time": "2024-01-01T10:00:00", "text": "I cook",
         "speaker": "U"},
        {"user": "u", "question": "Where?", "evidence_ids": ["a"], "category": 7},
        {"user": "u", "question": "What?", "evidence_ids": ["1:2"], "category": "x"},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows))
    ds = load_jsonl(path, exclude_categories=["7"])
    conv = ds.conversations[0]
    assert conv.turn("a").time == datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC)
    assert conv.turn("1:2").time.tzinfo is not None  # naive -> UTC
    assert conv.turn("1:2").session == "1"
    assert [p.question for p in conv.probes] == ["What?"]
    assert ds.report.excluded_by_category == 1
    sub = ds.subset(conversations=["u"], probes_per_conversation=1)
    assert sub.n_probes == 1


@pytest.mark.parametrize(
    ("content", "message", "line"),
    [
        ('{"user": "u", "session": "s", "time": "2024-01-01", "text": "hi"}\n{oops\n',
         "not valid JSON", 2),
        ('[1, 2]\n', "JSON object", 1),
        ('{"user": "u", "session": "s", "time": "2024-01-01", "txt": "hi"}\n',
         "a turn .with 'text'. or a probe", 1),
        ('{"user": "u", "session": "s", "time": "2024-01-01", "text": "hi", "mood": 1}\n',
         "mood", 1),
        ('{"user": "u", "session": "s", "time": "yesterday", "text": "hi"}\n', "time", 1),
        ('{"user": "u", "session": "s", "time": "2024-01-01", "text": "   "}\n', "text", 1),
        ('{"user": "", "session": "s", "time": "2024-01-01", "text": "hi"}\n', "user", 1),
        ('{"user": "u", "session": "s", "time": "2024-01-01", "text": "a", "id": "x"}\n'
         '{"user": "u", "session": "s", "time": "2024-01-01", "text": "b", "id": "x"}\n',
         "appears twice", 2),
        ('{"user": "u", "session": "s", "time": "2024-01-01", "text": "hi"}\n'
         '{"user": "v", "question": "q?", "evidence_ids": ["s:1"]}\n', "has no turns", 2),
        ('{"user": "u", "session": "s", "time": "2024-01-01", "text": "hi"}\n'
         '{"user": "u", "question": "q?", "evidence": ["s:1"]}\n', "evidence", 2),
        ('\n\n', "no turns", None),
    ],
)
def test_bad_jsonl_raises_a_typed_error_with_the_line(tmp_path: Path, content: str,
                                                      message: str, line: int | None):
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    with pytest.raises(DatasetError, match=message) as info:
        load_jsonl(path)
    assert info.value.line == line
    assert info.value.source == str(path)
    assert isinstance(info.value, InvalidInputError)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ("{not json", "not valid JSON"),
        ("[]", "non-empty JSON list"),
        ('[{"qa": []}]', "no 'conversation'"),
        ('[{"conversation": {"session_1": [{"text": "x", "dia_id": "D1:1"}]}}]',
         "session_1_date_time"),
        ('[{"conversation": {"session_1": [{"text": "x"}], "session_1_date_time": "soon"}}]',
         "cannot read the date"),
        ('[{"conversation": {"session_1": [], "session_1_date_time": '
         '"1:56 pm on 8 May, 2023"}}]', "no turns"),
        ('[{"conversation": {"session_1": [{"text": "x"}], "session_1_date_time": '
         '"1:56 pm on 8 May, 2023"}, "qa": [{"question": "q", "evidence": "D1:1"}]}]',
         "must be a list"),
    ],
)
def test_bad_locomo_raises_a_typed_error(tmp_path: Path, data: str, message: str):
    path = tmp_path / "bad.json"
    path.write_text(data)
    with pytest.raises(DatasetError, match=message):
        load_locomo(path)


def test_missing_file_and_format_sniffing(tmp_path: Path, tiny_locomo: Path, tiny_jsonl: Path):
    with pytest.raises(DatasetError, match="no such file"):
        load_dataset(tmp_path / "nope.jsonl")
    sniff_locomo = tmp_path / "data.txt"
    sniff_locomo.write_text(tiny_locomo.read_text())
    assert load_dataset(sniff_locomo).format == "locomo"
    sniff_jsonl = tmp_path / "logs.txt"
    sniff_jsonl.write_text(tiny_jsonl.read_text())
    assert load_dataset(sniff_jsonl).format == "jsonl"
    with pytest.raises(DatasetError, match="at least one"):
        load_dataset(tiny_jsonl).subset(conversations=0)
    with pytest.raises(DatasetError, match="no conversations named"):
        load_dataset(tiny_jsonl).subset(conversations=["zed"])


def test_time_order_and_session_offsets_are_kept(tiny_locomo: Path):
    conv = load_locomo(tiny_locomo).conversations[0]
    times = [t.time for t in conv.turns]
    assert times == sorted(times)
    assert times[1] - times[0] == timedelta(seconds=1)


# ------------------------------------------------ evidence lists, line breaks, limits


def test_evidence_ids_separated_by_spaces_are_split_like_semicolons(tmp_path: Path):
    from tests.eval.conftest import tiny_locomo_samples

    samples = tiny_locomo_samples()
    samples[0]["qa"] = [
        {"question": "spaces", "evidence": ["D2:1 D1:2"], "category": 1},
        {"question": "mixed", "evidence": ["D1:2;D2:1,  D1:3 "], "category": 1},
    ]
    path = tmp_path / "spaced.json"
    path.write_text(json.dumps(samples))
    probes = load_locomo(path).conversations[0].probes
    assert [p.evidence_ids for p in probes] == [("D2:1", "D1:2"), ("D1:2", "D2:1", "D1:3")]
    jsonl = tmp_path / "spaced.jsonl"
    jsonl.write_text(
        '{"user": "u", "session": "s", "time": "2024-01-01", "text": "a"}\n'
        '{"user": "u", "session": "s", "time": "2024-01-01", "text": "b"}\n'
        '{"user": "u", "question": "q?", "evidence_ids": ["s:1 s:2"]}\n'
    )
    assert load_jsonl(jsonl).conversations[0].probes[0].evidence_ids == ("s:1", "s:2")


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\x85", "\x0c"])
def test_jsonl_strings_may_hold_characters_splitlines_breaks_on(tmp_path: Path,
                                                                 separator: str):
    text = f"first line{separator}second line"
    rows = [
        {"user": "u", "session": "s", "time": "2024-01-01", "text": text},
        {"user": "u", "question": f"what{separator}?", "evidence_ids": ["s:1"]},
    ]
    path = tmp_path / "seps.jsonl"
    # ensure_ascii=False writes the character itself, as most JSON writers do
    path.write_text("\r\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n",
                    encoding="utf-8")
    ds = load_dataset(path)
    assert ds.conversations[0].turn("s:1").text == text
    assert ds.conversations[0].probes[0].question == f"what{separator}?"


def test_a_turn_over_the_write_limit_fails_loading_with_its_line(tmp_path: Path):
    from memstrata.config import DEFAULT_MAX_CONTENT_CHARS

    long = "word " * (DEFAULT_MAX_CONTENT_CHARS // 5 + 1)
    path = tmp_path / "long.jsonl"
    path.write_text(
        '{"user": "u", "session": "s", "time": "2024-01-01", "text": "short"}\n'
        + json.dumps({"user": "u", "session": "s", "time": "2024-01-01", "text": long}) + "\n"
    )
    with pytest.raises(DatasetError, match="over the write limit of 8,000") as info:
        load_dataset(path)
    assert (info.value.source, info.value.line) == (str(path), 2)
    # the limit follows the memory's max_content_chars when it is not the default
    assert load_dataset(path, max_chars=len(long)).n_turns == 2
    with pytest.raises(DatasetError, match="over the write limit of 4") as info:
        load_jsonl(path, max_chars=4)
    assert info.value.line == 1


def test_a_locomo_turn_over_the_write_limit_names_the_sample_and_dialog(tmp_path: Path):
    from tests.eval.conftest import tiny_locomo_samples

    samples = tiny_locomo_samples()
    samples[0]["conversation"]["session_2"][1]["text"] = "x" * 9000
    path = tmp_path / "long.json"
    path.write_text(json.dumps(samples))
    with pytest.raises(DatasetError, match=r"conv-a: turn D2:2 is 9,000 characters") as info:
        load_dataset(path)
    assert info.value.source == str(path)


def test_unusable_user_ids_fail_loading(tmp_path: Path):
    path = tmp_path / "users.jsonl"
    path.write_text(
        json.dumps({"user": "u" * 300, "session": "s", "time": "2024-01-01", "text": "hi"})
        + "\n"
    )
    with pytest.raises(DatasetError, match="user id") as info:
        load_jsonl(path)
    assert info.value.line == 1
