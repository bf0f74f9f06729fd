"""Load a suite from bench/attack/ (scripts, not a package) so the CI tests reuse their functions."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ATTACK = Path(__file__).resolve().parent.parent / "bench" / "attack"


def load(name: str) -> ModuleType:
    if str(ATTACK) not in sys.path:
        sys.path.insert(0, str(ATTACK))
    key = f"attack_{name}"
    if key in sys.modules:
        return sys.modules[key]
    spec = importlib.util.spec_from_file_location(key, ATTACK / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[key] = module
    spec.loader.exec_module(module)
    return module
