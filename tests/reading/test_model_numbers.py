"""The model reader reads a number whole (``+numbers`` in its version).

Reproduces misreadings of the tenth blind round (written blind, first looked at in stop 50,
training data since): the tags began an age on a piece of its number - 五十歲 read as 10,
"sixty-five" as 60 and 5.
"""

from __future__ import annotations

import pytest

from memstrata.reading import Held, ModelReader
from memstrata.reading.model import whole_number


@pytest.fixture(scope="module")
def reader() -> ModelReader:
    return ModelReader()


@pytest.mark.parametrize(("text", "piece", "whole"), [
    ("啱啱過咗五十歲生日", "十", "五十"),
    ("我今年三十五了", "三十", "三十五"),
    ("retired last friday at sixty-five and", "sixty", "sixty-five"),
    ("retired last friday at sixty-five and", "five", "sixty-five"),
    ("turning sixty five yesterday", "five", "sixty five"),
    ("I'm 35 now", "35", "35"),
    # not a number's piece, or a number whole already: unchanged
    ("I moved to Leeds", "Leeds", "Leeds"),
    ("five kids and twenty cats", "twenty", "twenty"),
    ("she is forty now", "forty", "forty"),
])
def test_a_number_is_widened_to_the_whole_number_it_is_a_piece_of(
        text: str, piece: str, whole: str) -> None:
    a = text.index(piece)
    got = whole_number(text, a, a + len(piece))
    assert text[got[0]:got[1]] == whole


@pytest.mark.parametrize(("held", "turn", "value"), [
    (Held("age", "49"), "啱啱過咗五十歲生日，啲仔女話要帶我去做身體檢查，"
                        "五十歲要驗啲乜嘢㗎？", "50"),
    (Held("age", "64"), "retired last friday at sixty-five and the grandkids made me a cake "
                        "shaped like a golf bag. how do I start drawing my pension?", "65"),
])
def test_an_age_said_in_words_is_read_whole(reader: ModelReader, held: Held, turn: str,
                                            value: str) -> None:
    got = [r.value for r in reader.read(turn, [held])
           if r.attribute == "age" and r.current_own]
    assert got == [value]


def test_the_version_says_numbers_are_read_whole(reader: ModelReader) -> None:
    assert reader.version.startswith("model-") and "+numbers" in reader.version
