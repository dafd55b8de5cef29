"""The LLM reader over real HTTP to the loopback OpenAI-format server: recorded answers of
a chat model, good and broken, and what the reader keeps of each."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from memstrata.errors import InvalidInputError, InvalidSettingError, LLMAuthError, LLMResponseError
from memstrata.llm import OpenAIClient, Retry, Timeouts
from memstrata.reading import Asked, Reader, Reading, Relation
from memstrata.reading.llm import PROMPT_VERSION, LLMReader
from memstrata.testing import OpenAICompatServer, Reply, allow_model_requests

MODEL = "qwen2.5-7b-instruct"


@pytest.fixture
def server() -> Iterator[OpenAICompatServer]:
    with OpenAICompatServer() as srv, allow_model_requests():
        yield srv
        assert srv.pending == 0, "a scripted answer was never asked for"


@pytest.fixture
def client(server: OpenAICompatServer) -> Iterator[OpenAIClient]:
    with OpenAIClient(model=MODEL, base_url=server.base_url, api_key="k",
                      retry=Retry(max_attempts=1), timeouts=Timeouts(connect=2, read=5)) as c:
        yield c


@pytest.fixture
def reader(client: OpenAIClient) -> LLMReader:
    return LLMReader(client, batch_size=4, max_tokens=700)


def found(attribute: str, value: Any, *, holder: str = "user", when: str = "now",
          negated: bool = False, confidence: float = 0.9) -> dict[str, Any]:
    return {"attribute": attribute, "value": value, "holder": holder, "when": when,
            "negated": negated, "confidence": confidence}


def readings(*items: tuple[int, list[dict[str, Any]]], **usage: int) -> Reply:
    """The model's call of the read tool, one item per turn."""
    return Reply.tool_calls([("submit_readings", {"items": [
        {"index": i, "readings": r} for i, r in items]})], **usage)


def cut_off(reply: Reply) -> Reply:
    """``reply`` as an endpoint sends it when the answer reached ``max_tokens``."""
    assert reply.body is not None
    reply.body["choices"][0]["finish_reason"] = "length"
    return reply


def reasons(reader: LLMReader) -> str:
    return "\n".join(r.reason for r in reader.rejected)


# ------------------------------------------------------------------ good answers


def test_a_turn_is_read_into_checked_readings_with_spans(
        reader: LLMReader, server: OpenAICompatServer) -> None:
    turn = "I live in Leeds now, I'm 34 and I went vegan last month."
    server.push(readings((0, [found("city", "Leeds", confidence=0.95), found("age", 34),
                              found("diet", "Vegan")]), prompt_tokens=1900,
                         completion_tokens=80))
    got = reader.read(turn)
    assert got == [Reading("city", "Leeds", confidence=0.95, span=(10, 15)),
                   Reading("age", "34", confidence=0.9, span=(25, 27)),
                   Reading("diet", "vegan", confidence=0.9, span=(39, 44))]
    assert all(turn[r.span[0]:r.span[1]].casefold() == r.value.casefold()
               for r in got if r.span is not None)
    assert not reader.rejected and reader.calls == 1
    assert (reader.usage.prompt_tokens, reader.usage.completion_tokens) == (1900, 80)


def test_the_request_asks_for_the_schema_with_a_prompt_made_from_the_registry(
        reader: LLMReader, server: OpenAICompatServer) -> None:
    server.push(readings((0, [])))
    reader.read("my beagle Max hates the rain")
    (request,) = server.chat_requests()
    assert request["model"] == MODEL
    assert request["max_tokens"] == 700 and request["temperature"] == 0.0
    (tool,) = request["tools"]
    assert tool["function"]["name"] == "submit_readings"
    schema = tool["function"]["parameters"]
    (reading,) = [d for d in schema["$defs"].values() if d["title"] == "Reading"]
    assert "pets" in reading["properties"]["attribute"]["enum"]
    assert reading["properties"]["holder"]["enum"] == ["user", "other"]
    assert reading["properties"]["when"]["enum"] == ["now", "past", "plan", "hypothetical",
                                                     "one_off"]
    system, user = request["messages"]
    for words in ("the city the user lives in now", "用户现在居住的城市", "I live in Leeds",
                  "vegetarian, vegan, pescatarian", "digits", '"other"', "one_off",
                  "hypothetical", "negated"):
        assert words in system["content"], words
    assert json.loads(user["content"]) == {"turns": [{"index": 0,
                                                      "text": "my beagle Max hates the rain"}]}


def test_a_sisters_move_answered_as_someone_elses_comes_back_as_hers(
        reader: LLMReader, server: OpenAICompatServer) -> None:
    server.push(readings((0, [found("city", "lyon", holder="other")])))
    (city,) = reader.read("My sister just moved to Lyon.")
    assert (city.attribute, city.value, city.holder, city.when) == ("city", "Lyon", "other",
                                                                     "now")
    assert not city.current_own


def test_when_and_denial_come_back_as_answered(
        reader: LLMReader, server: OpenAICompatServer) -> None:
    turn = "I used to live in Leeds, we move to Berlin in May, and I'm not vegetarian."
    server.push(readings((0, [found("city", "Leeds", when="past"),
                              found("city", "Berlin", when="plan"),
                              found("diet", "vegetarian", negated=True)])))
    got = reader.read(turn)
    assert [(r.value, r.when, r.negated) for r in got] == [
        ("Leeds", "past", False), ("Berlin", "plan", False), ("vegetarian", "now", True)]
    assert not any(r.current_own for r in got)


def test_a_chinese_turn_keeps_its_own_words_and_a_json_answer_in_text_is_read(
        reader: LLMReader, server: OpenAICompatServer) -> None:
    answer = {"items": [{"index": 0, "readings": [found("city", "上海"),
                                                  found("age", "30"),
                                                  found("diet", "vegetarian")]}]}
    server.push(Reply.text("```json\n" + json.dumps(answer, ensure_ascii=False) + "\n```"))
    got = reader.read("我搬到上海了，今年三十，现在吃素食")
    assert got == [Reading("city", "上海", confidence=0.9, span=(3, 5)),
                   Reading("age", "30", confidence=0.9, span=None),
                   Reading("diet", "vegetarian", confidence=0.9, span=(15, 17))]


def test_a_full_width_or_differently_cased_value_is_the_same_words(
        reader: LLMReader, server: OpenAICompatServer) -> None:
    server.push(readings((0, [found("employer", "siemens ag"), found("age", "３４")])),
                readings((0, [found("age", "034")])))
    got = reader.read("Ｉ work at ＳＩＥＭＥＮＳ AG and I'm 34.")
    assert [(r.value, r.span) for r in got] == [("ＳＩＥＭＥＮＳ AG", (10, 20)), ("34", (29, 31))]
    assert reader.read("Flat 340, I'm 34") == [Reading("age", "34", confidence=0.9,
                                                       span=(14, 16))]


# ------------------------------------------------------------------ refused readings


def test_a_translated_value_is_refused(reader: LLMReader, server: OpenAICompatServer) -> None:
    server.push(readings((0, [found("city", "Shanghai")])))
    assert reader.read("我搬到上海了") == []
    (rejection,) = reader.rejected
    assert rejection.call == "read" and rejection.turn == 0
    assert "'Shanghai' is not words of the turn" in rejection.reason


def test_each_bad_reading_is_dropped_alone_and_the_good_ones_kept(
        reader: LLMReader, server: OpenAICompatServer) -> None:
    turn = "I work at Siemens, I'm thirty-four, my GP is Dr. Patel and I eat mostly plants."
    server.push(readings((0, [
        found("employer", "Google"),                  # not in the turn
        found("favourite_colour", "green"),           # not an attribute
        found("diet", "plant-based"),                 # not a label
        found("age", "thirty-four"),                  # not digits
        found("employer", "Siemens", holder="sister"),  # not a holder
        found("employer", "Siemens", when="soon"),    # not a when
        {"attribute": "doctor", "value": "Dr. Patel"},  # no holder, when, negated
        "employer: Siemens",                          # not an object
        found("employer", "Siemens"),                 # good
        found("doctor", "Dr. Patel."),                # good, its full stop stripped
    ])))
    got = reader.read(turn)
    assert [(r.attribute, r.value) for r in got] == [("employer", "Siemens"),
                                                      ("doctor", "Dr. Patel")]
    assert len(reader.rejected) == reader.rejected_total == 8
    text = reasons(reader)
    for words in ("'Google' is not words of the turn", "unknown attribute 'favourite_colour'",
                  "'plant-based' is not one of its labels", "'thirty-four' is not digits",
                  "holder: Input should be 'user' or 'other'", "when: Input should be",
                  "holder: Field required", "Input should be a valid dictionary"):
        assert words in text, words


def test_a_batch_is_one_call_and_a_bad_item_costs_only_its_turn(
        reader: LLMReader, server: OpenAICompatServer) -> None:
    turns = ["我搬到上海了", "I drive a Corolla", "", "thanks, that's all"]
    server.push(readings((0, [found("city", "Shanghai")]), (1, [found("car", "Corolla")]),
                         (7, [found("car", "Corolla")])))
    got = reader.read_many(turns)
    assert got == [[], [Reading("car", "Corolla", confidence=0.9, span=(10, 17))], [], []]
    (request,) = server.chat_requests()
    sent = json.loads(request["messages"][1]["content"])["turns"]
    assert [t["index"] for t in sent] == [0, 1, 3]  # the empty turn is not sent
    assert [r.turn for r in reader.rejected] == [0, None]
    assert "turn 7, which was not asked" in reasons(reader)


def test_turns_are_sent_batch_size_at_a_time(
        client: OpenAIClient, server: OpenAICompatServer) -> None:
    reader = LLMReader(client, batch_size=2)
    turns = ["I live in Leeds", "I'm a nurse", "my son Leo", "I bank with Chase",
             "I have Netflix"]
    server.push(readings((0, [found("city", "Leeds")]), (1, [found("occupation", "nurse")])),
                readings((1, [found("bank", "Chase")]), (0, [found("children", "Leo")])),
                readings((0, [found("streaming", "Netflix")])))
    got = reader.read_many(turns)
    assert [[r.value for r in g] for g in got] == [["Leeds"], ["nurse"], ["Leo"], ["Chase"],
                                                   ["Netflix"]]
    assert [len(json.loads(r["messages"][1]["content"])["turns"])
            for r in server.chat_requests()] == [2, 2, 1]
    assert "max_tokens" not in server.chat_requests()[0]


# ------------------------------------------------------------------ refused answers


def test_malformed_json_gives_no_readings_and_is_recorded(
        reader: LLMReader, server: OpenAICompatServer) -> None:
    server.push(Reply.tool_calls([("submit_readings",
                                   "{items: [{index: 0, readings: [{attribute: city")]),
                Reply.text("Sure! The user lives in Leeds."))
    assert reader.read_many(["I live in Leeds", "I'm a nurse"]) == [[], []]
    assert reader.read("I live in Leeds") == []
    assert [r.turn for r in reader.rejected] == [None, None]
    assert all("is not JSON" in r.reason for r in reader.rejected)


def test_an_answer_cut_off_at_max_tokens_gives_no_readings(
        reader: LLMReader, server: OpenAICompatServer) -> None:
    whole = json.dumps({"items": [{"index": 0, "readings": [found("city", "Leeds")]},
                                  {"index": 1, "readings": [found("occupation", "nurse")]}]})
    server.push(cut_off(Reply.text(whole[:-40], completion_tokens=700)))
    assert reader.read_many(["I live in Leeds", "I'm a nurse"]) == [[], []]
    (rejection,) = reader.rejected
    assert "cut off at max_tokens" in rejection.reason


def test_an_answer_of_the_wrong_shape_gives_no_readings(
        reader: LLMReader, server: OpenAICompatServer) -> None:
    server.push(Reply.text(json.dumps([{"index": 0, "readings": [found("city", "Leeds")]}])),
                Reply.text(json.dumps({"items": {"0": ["Leeds"]}})),
                Reply.tool_calls([("remember", {"city": "Leeds"})]))
    for _ in range(3):
        assert reader.read("I live in Leeds") == []
    text = reasons(reader)
    assert "not a JSON object" in text and "wrong shape" in text
    assert "called remember instead of submit_readings" in text


def test_endpoint_errors_propagate(reader: LLMReader, server: OpenAICompatServer) -> None:
    server.push(Reply.error(401, "invalid api key"), Reply.malformed(b"<html>oops"))
    with pytest.raises(LLMAuthError):
        reader.read("I live in Leeds")
    with pytest.raises(LLMResponseError):
        reader.read("I live in Leeds")
    assert not reader.rejected


# ------------------------------------------------------------------ relate and ask


def test_relate_reads_the_relation_and_refuses_an_invalid_one(
        reader: LLMReader, server: OpenAICompatServer) -> None:
    server.push(
        Reply.tool_calls([("submit_relation", {"kind": "update", "attribute": "city",
                                               "confidence": 0.92})]),
        Reply.tool_calls([("submit_relation", {"kind": "moved", "attribute": "city"})]),
        Reply.tool_calls([("submit_relation", {"kind": "update", "attribute": "town"})]),
        Reply.text("The newer statement updates the city."),
    )
    assert reader.relate("I live in Berlin.", "I moved to Munich.") == Relation(
        "update", 0.92, "city")
    unsure = Relation(kind="unrelated", confidence=0.0)
    for _ in range(3):
        assert reader.relate("I live in Berlin.", "I moved to Munich.") == unsure
    assert [r.call for r in reader.rejected] == ["relate"] * 3
    (first, *_) = server.chat_requests()
    assert first["tools"][0]["function"]["name"] == "submit_relation"
    assert json.loads(first["messages"][1]["content"]) == {"older": "I live in Berlin.",
                                                           "newer": "I moved to Munich."}


def test_ask_reads_the_attribute_asked_for(reader: LLMReader,
                                          server: OpenAICompatServer) -> None:
    server.push(
        Reply.tool_calls([("submit_question", {"attribute": "city", "whose": "other",
                                               "time": "past", "confidence": 0.85})]),
        Reply.text('{"attribute": null}'),
        Reply.tool_calls([("submit_question", {"attribute": "hometown"})]),
        Reply.tool_calls([("submit_question", '{"attribute": "ci')]),
    )
    assert reader.ask("Where did my sister live before?") == Asked("city", "other", "past",
                                                                   0.85)
    assert reader.ask("What's the weather like?") is None
    assert reader.ask("Where am I from?") is None
    assert reader.ask("Where do I live?") is None
    assert [r.call for r in reader.rejected] == ["ask", "ask"]
    assert "unknown attribute 'hometown'" in reasons(reader)


# ------------------------------------------------------------------ identity and settings


def test_the_reader_names_its_model_and_prompt_and_satisfies_the_protocol(
        reader: LLMReader) -> None:
    protocol: Reader = reader
    assert protocol.name == "llm"
    assert MODEL in reader.version and f"prompt={PROMPT_VERSION}" in reader.version


def test_nothing_to_read_makes_no_call(reader: LLMReader, server: OpenAICompatServer) -> None:
    assert reader.read_many([]) == []
    assert reader.read("   ") == []
    assert server.chat_requests() == [] and reader.calls == 0
    with pytest.raises(InvalidInputError):
        reader.read_many("I live in Leeds")


@pytest.mark.parametrize("settings", [{"batch_size": 0}, {"max_tokens": 0}])
def test_bad_settings_are_refused(client: OpenAIClient, settings: dict[str, int]) -> None:
    with pytest.raises(InvalidSettingError):
        LLMReader(client, **settings)
