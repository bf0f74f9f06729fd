"""The second attack round (bench/attack/round2.py), its quick form: every finding of issue 14 replayed."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.attacksuite import load

pytestmark = pytest.mark.slow


def test_quick_round_two(tmp_path: Path) -> None:
    result = load("round2").run(quick=True, out=tmp_path)
    assert result.ok, result.failures[:5]
    assert result.figures["cases"] == 10 and result.figures["leaks_served"] == 0
