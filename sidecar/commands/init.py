"""`sidecar init`: set a vault up without Obsidian running.

Pick the vault (from Obsidian's own list, sidecar/commands/vaults.py, or `--vault`), check every moving part
as `doctor` does, index it, and hand back what an agent needs: the MCP configuration for Claude Code,
Cursor and Codex and a prompt-submit hook that calls `sidecar context`. The index is the one the
plugin and `sidecar serve` use for that vault (the same default folder), so nothing is built twice.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sidecar.commands.doctor import Check, run_checks
from sidecar.commands.vaults import KnownVault
from sidecar.config import Settings
from sidecar.store.indexer import Progress

if TYPE_CHECKING:
    from sidecar.protocol_types import IndexStatus

Ask = Callable[[str], str]


class InitStopped(ValueError):
    """Init cannot go on; the message says why and what to do."""


def pick_vault(vaults: list[KnownVault], ask: Ask, where: list[Path]) -> Path:
    """The vault the user picks from Obsidian's list (by number); the only one without asking."""
    usable = [v for v in vaults if v.exists]
    if not usable:
        looked = ", ".join(str(p) for p in where) or "nowhere"
        raise InitStopped(f"no Obsidian vault list found (looked in {looked}): pass --vault PATH")
    if len(usable) == 1:
        return usable[0].path
    menu = "\n".join(f"  {i}. {v.name}  ({v.path}){'  [open in Obsidian]' if v.open else ''}"
                     for i, v in enumerate(usable, start=1))
    try:
        answer = ask(f"Obsidian knows these vaults:\n{menu}\nWhich one? [1-{len(usable)}, Enter: 1] ").strip()
    except EOFError:
        raise InitStopped("no answer on stdin: pass --vault PATH") from None
    if not answer:
        return usable[0].path
    if not answer.isdigit() or not 1 <= int(answer) <= len(usable):
        raise InitStopped(f"not one of 1-{len(usable)}: {answer!r}")
    return usable[int(answer) - 1].path


@dataclass
class InitResult:
    checks: list[Check]
    report: dict[str, Any] | None = None
    status: IndexStatus | None = None
    mcp: dict[str, Any] | None = None
    hook: dict[str, Any] | None = None

    @property
    def failed(self) -> list[Check]:
        return [c for c in self.checks if c.state == "fail"]

    def to_json(self) -> dict[str, Any]:
        return {"checks": [c.to_json() for c in self.checks], "report": self.report, "status": self.status,
                "mcp": self.mcp, "hook": self.hook}


def init_vault(settings: Settings, progress: Callable[[Progress], None],
               on_checks: Callable[[list[Check]], None], mcp_port: int | None) -> InitResult:
    """Checks, then (when none failed) the index and the agent configuration."""
    from sidecar.core import VaultIndex  # noqa: PLC0415  (loads the model: after the checks are shown)
    from sidecar.serve.mcp_config import client_config, hook_config  # noqa: PLC0415
    from sidecar.serve.tokens import mcp_token  # noqa: PLC0415

    result = InitResult(run_checks(settings))
    on_checks(result.checks)
    if result.failed:
        return result
    index = VaultIndex(settings)
    try:
        result.report = index.index(progress=progress).to_json()
        result.status = index.status()
    finally:
        index.close()
    result.mcp = client_config(settings, mcp_port, mcp_token() if mcp_port else None)
    result.hook = hook_config(settings)
    return result
