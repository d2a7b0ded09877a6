"""The README's two commands are the ones CI runs (so a missing install step fails in CI first)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_ci_runs_the_readme_commands() -> None:
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```bash\n(.*?)```", readme, flags=re.S)
    commands = [line.strip() for b in blocks[:2] for line in b.strip().splitlines()]
    assert len(commands) == 2, commands
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    for cmd in commands:
        assert cmd in (line.strip() for line in ci), f"{cmd!r} is not run verbatim by .ci/run"
