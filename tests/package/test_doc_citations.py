"""Every citation of the docs in the code resolves: ``docs/<page>.md`` exists, and ``docs/<page>.md §N``
names a section that page has (a heading that starts with ``N`` or holds ``§N``).

The code cites the theory and the guides by section number (``docs/theory/verifiers.md §8.5``); a page
split, a renumbered section or a moved file would otherwise leave the citation pointing nowhere.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CITE = re.compile(r"docs/([A-Za-z0-9_/]+\.md)(?:,? ?§ ?(\d+(?:\.\d+)*))?")
SOURCES = [
    p
    for top in ("python", "cpp", "tests", "bench", "examples")
    if (ROOT / top).is_dir()
    for p in sorted((ROOT / top).rglob("*"))
    if p.suffix in (".py", ".hpp", ".cpp", ".pyi") and "_build" not in p.parts
]


def _citations() -> list[tuple[str, int, str, str | None]]:
    out = []
    for p in SOURCES:
        for i, line in enumerate(p.read_text(errors="replace").splitlines(), 1):
            for m in CITE.finditer(line):
                out.append((str(p.relative_to(ROOT)), i, m.group(1), m.group(2)))
    return out


CITATIONS = _citations()


def _sections(page: Path) -> set[str]:
    """The section numbers of a page: its headings ('## 4.2.1 Title', '### §3.5 Title', '## 3. Title')
    and the numbered items of a section's list ('11. ...' under '# 9.' is §9.11)."""
    out: set[str] = set()
    current = ""
    for line in page.read_text().splitlines():
        m = re.match(r"#+\s+(?:§\s*)?(\d+(?:\.\d+)*)\.?\s", line)
        if m:
            current = m.group(1)
            out.add(current)
            continue
        item = re.match(r"(\d+)\.\s", line)
        if item and current:
            out.add(f"{current}.{item.group(1)}")
    return out


def test_the_code_cites_the_docs() -> None:
    assert len(CITATIONS) > 50  # the scan sees the citations (a broken pattern would pass vacuously)


@pytest.mark.parametrize("page", sorted({c[2] for c in CITATIONS}))
def test_citations_resolve(page: str) -> None:
    path = ROOT / "docs" / page
    where = [f"{f}:{i}" for f, i, pg, _ in CITATIONS if pg == page]
    assert path.is_file(), f"docs/{page} does not exist; cited at {where[:5]}"
    have = _sections(path)
    missing = sorted({(sec, f"{f}:{i}") for f, i, pg, sec in CITATIONS if pg == page and sec and sec not in have})
    assert not missing, f"docs/{page} has no section {missing[:8]} (its sections: {sorted(have)[:20]})"
