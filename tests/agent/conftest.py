"""Agent fixtures: real SQLite memory with the real embedding model, the example shop,
and no unplanned real model call (``forbid_model_requests`` for every test)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memstrata.agent.examples.after_sales import Shop, create_shop
from memstrata.testing import forbid_model_requests


@pytest.fixture(autouse=True)
def _no_real_model_calls() -> Iterator[None]:
    with forbid_model_requests():
        yield


@pytest.fixture
def shop(tmp_path: Path) -> Shop:
    return create_shop(tmp_path / "shop.db")
