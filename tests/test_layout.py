"""The tree is the pipeline: docs/architecture.md's module table names every module in sidecar/,
and the import contracts in pyproject.toml (checked by lint-imports in build.py test) name every
package, so a new module or package cannot land outside the rules."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SIDECAR = ROOT / "sidecar"
ENTRY_POINTS = {"__init__.py", "__main__.py"}


def tree_modules() -> set[str]:
    return {p.relative_to(SIDECAR).as_posix() for p in SIDECAR.rglob("*.py")
            if p.name not in ENTRY_POINTS and "models" not in p.relative_to(SIDECAR).parts}


def documented_modules() -> set[str]:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    table = text.split("\n## Modules", 1)[1].split("\n## ", 1)[0]
    return {name for row in table.splitlines() if row.startswith("| `")
            for name in re.findall(r"`([\w/]+\.py)`", row.split("|")[1])}


def contracts() -> list[dict[str, object]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    found: list[dict[str, object]] = config["tool"]["importlinter"]["contracts"]
    return found


def test_the_module_table_names_every_module_in_the_tree() -> None:
    tree, documented = tree_modules(), documented_modules()
    assert not tree - documented, f"add to docs/architecture.md's module table: {sorted(tree - documented)}"
    assert not documented - tree, f"no such module (docs/architecture.md): {sorted(documented - tree)}"


def test_the_layers_contract_names_every_package_and_top_module() -> None:
    layers = next(c for c in contracts() if c["type"] == "layers")["layers"]
    assert isinstance(layers, list)
    named = {name.strip() for layer in layers for name in re.split(r"[|:]", layer)}
    packages = {f"sidecar.{p.name}" for p in SIDECAR.iterdir() if (p / "__init__.py").exists()}
    modules = {f"sidecar.{p.stem}" for p in SIDECAR.glob("*.py") if p.name not in ENTRY_POINTS}
    assert named == packages | modules


def test_every_package_says_what_lives_there_and_what_it_may_import() -> None:
    for init in SIDECAR.rglob("__init__.py"):
        if init.parent == SIDECAR or "models" in init.parts:
            continue
        text = init.read_text(encoding="utf-8")
        assert text.startswith('"""'), f"{init.relative_to(ROOT)}: a docstring saying what lives there"
        if init.parent.parent == SIDECAR:
            assert "import" in text, f"{init.relative_to(ROOT)}: say what the package may import"
