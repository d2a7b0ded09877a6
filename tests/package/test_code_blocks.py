"""The Python in README.md and docs/**/*.md runs as written, and prints what the text says it prints.

For each Markdown file, the fenced blocks opened by a line that is exactly ```python are joined top
to bottom and run in one fresh interpreter (``sys.executable``, a temporary working directory,
``MPLBACKEND=Agg``): one test case per file, named by its path. An error fails the case with the
file's own line numbers (the code is compiled with the Markdown's line numbers, so tracebacks
point into the page).

Conventions for writers of README.md and the docs:

- ``# -> <value>`` at the end of a line that is a bare expression states what it evaluates to, and
  is checked. A float claim is met when the value rounded to the claim's decimals equals it
  (``mf.optimal_acceptance(p, q, 2, "wor")  # -> 0.9857``); with an exponent, to the claim's
  significant digits (``# -> 2.6e-13``). An int or bool claim must be equal (a float value is
  rounded to 0 decimals). A tuple or list claim of such numbers checks element by element
  (``mf.acceptance_bounds(...)  # -> (0.512, 0.534)``, a 1-D array value is fine). A quoted
  string must be equal; anything else is compared with ``str(value)`` (``mf.ISA  # -> avx2``).
- ``# requires: torch, transformers`` as the first line of a block skips the file's case when one
  of those modules cannot be imported (the optional extras).
- Only ```python fences run. A sketch that is not meant to run (``...`` for a body, names the
  reader supplies) goes in another fence, for example the MyST directive ```{code-block} python,
  which is highlighted the same.
"""

from __future__ import annotations

import ast
import importlib.util
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^(\s*)(`{3,})python\s*$")
CLAIM = re.compile(r"#\s*->\s*(.+?)\s*$")
REQUIRES = re.compile(r"^#\s*requires:\s*(.+?)\s*$")
TIMEOUT = 600  # seconds per file


def python_blocks(text: str) -> list[tuple[int, str]]:
    """The ```python blocks of a Markdown text: (line of the block's first code line, code)."""
    blocks, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        i += 1
        if not m:
            continue
        indent, ticks, start, body = len(m.group(1)), m.group(2), i + 1, []
        while i < len(lines) and not re.match(rf"^\s*{ticks}`*\s*$", lines[i]):
            line = lines[i]
            body.append(line[indent:] if line[:indent].isspace() or not indent else line.lstrip())
            i += 1
        i += 1
        blocks.append((start, "\n".join(body) + "\n"))
    return blocks


def markdown_files() -> list[Path]:
    files = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    return [f for f in files if "_build" not in f.relative_to(ROOT).parts and f.is_file()]


def _cases() -> list:
    cases = []
    for f in markdown_files():
        blocks = python_blocks(f.read_text(encoding="utf-8"))
        if blocks:
            cases.append(pytest.param(f, blocks, id=f.relative_to(ROOT).as_posix()))
    return cases


# ---------------------------------------------------------------------------------- the runner
# Runs in the child interpreter: ``python test_code_blocks.py`` with the blocks as JSON on stdin
# (the ``__main__`` guard at the end).


def _claimed(claim: str):
    """(value, digits) pairs of a claim text, or the raw string for a non-literal claim."""
    try:
        node = ast.parse(claim, mode="eval").body
        ast.literal_eval(node)
    except (SyntaxError, ValueError):
        return claim
    if isinstance(node, (ast.Tuple, ast.List)):
        return [_number(ast.get_source_segment(claim, e)) for e in node.elts]
    return _number(claim)


def _number(text: str):
    value = ast.literal_eval(text)
    if isinstance(value, float):
        mantissa = re.split(r"[eE]", text.lstrip("+-"))[0]
        digits = len(mantissa.split(".")[1]) if "." in mantissa else 0
        return value, digits, bool(re.search(r"[eE]", text))
    return value, 0, False


def _matches(value, claim) -> bool:
    if isinstance(claim, str):
        return str(value) == claim
    if isinstance(claim, list):
        got = list(getattr(value, "tolist", lambda: value)())
        return len(got) == len(claim) and all(_matches(v, c) for v, c in zip(got, claim, strict=True))
    want, digits, scientific = claim
    if isinstance(want, bool) or not isinstance(want, (int, float)):  # True, None, 'a string'
        return bool(value == want)
    value = float(value)
    if scientific:
        return f"{value:.{digits}e}" == f"{want:.{digits}e}"
    return round(value, digits) == want


def _check(value, claim_text: str, where: str) -> None:
    claim = _claimed(claim_text)
    if not _matches(value, claim):
        raise AssertionError(f"{where}: the text claims {claim_text}, the code gives {value!r}")


class _Claims(ast.NodeTransformer):
    """Turns ``expr  # -> value`` statements into ``_check(expr, "value", "file:line")``."""

    def __init__(self, comments: dict[int, str], path: str) -> None:
        self.comments, self.path = comments, path

    def visit_Expr(self, node: ast.Expr) -> ast.AST:
        m = CLAIM.search(self.comments.get(node.end_lineno or node.lineno, ""))
        if not m:
            return node
        where = f"{self.path}:{node.end_lineno}"
        call = ast.Call(
            ast.Name("_check_claim", ast.Load()), [node.value, ast.Constant(m.group(1)), ast.Constant(where)], []
        )
        return ast.copy_location(ast.Expr(call), node)


def _run(payload: dict) -> int:
    import traceback

    path, scope = payload["path"], {"__name__": "__main__", "_check_claim": _check}
    for start, code in payload["blocks"]:
        source = "\n" * (start - 1) + code  # the Markdown's own line numbers
        end = start + code.count("\n") - 1
        try:
            tokens = tokenize.generate_tokens(io.StringIO(source).readline)
            comments = {t.start[0]: t.string for t in tokens if t.type == tokenize.COMMENT}
            tree = ast.fix_missing_locations(_Claims(comments, path).visit(ast.parse(source, path)))
            exec(compile(tree, path, "exec"), scope)
        except BaseException:
            print(f"{path}: the block at lines {start}-{end} failed:", file=sys.stderr)
            traceback.print_exc()
            return 1
    return 0


# ---------------------------------------------------------------------------------- the tests


@pytest.mark.parametrize(("path", "blocks"), _cases())
def test_code_blocks_run(path: Path, blocks: list[tuple[int, str]]) -> None:
    for _, code in blocks:
        first = code.lstrip().splitlines()[0] if code.strip() else ""
        m = REQUIRES.match(first)
        for module in m.group(1).replace(",", " ").split() if m else []:
            if importlib.util.find_spec(module) is None:
                pytest.skip(f"needs {module} (an optional extra)")
    rel = path.relative_to(ROOT).as_posix()
    env = dict(os.environ, MPLBACKEND="Agg")
    with tempfile.TemporaryDirectory() as cwd:
        done = subprocess.run(
            [sys.executable, str(Path(__file__).resolve())],
            input=json.dumps({"path": rel, "blocks": blocks}),
            capture_output=True,
            text=True,
            cwd=cwd,
            env=env,
            timeout=TIMEOUT,
        )
    assert done.returncode == 0, f"{rel}: a code block failed\n{done.stderr[-6000:]}"


def test_ci_runs_the_readme_commands() -> None:
    """The README's install and test commands are the ones .ci/run runs, verbatim (so a missing
    install step fails in CI first)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    bash = [line.strip() for b in re.findall(r"```bash\n(.*?)```", readme, flags=re.S) for line in b.splitlines()]
    ci = {line.strip() for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()}
    for cmd in ('pip install ".[test]" && mdsd-fast report', "python -m pytest tests"):
        assert cmd in bash, f"README.md has no ```bash line {cmd!r}"
        assert cmd in ci, f"{cmd!r} is not run verbatim by .ci/run"


def test_claims_are_checked() -> None:
    """The ``# -> value`` convention itself, on values that meet and miss their claims."""
    assert _matches(0.98571428, _claimed("0.9857")) and not _matches(0.98571428, _claimed("0.9858"))
    assert _matches(3, _claimed("3")) and _matches(2.9999999, _claimed("3")) and not _matches(4, _claimed("3"))
    assert _matches(2.6049e-13, _claimed("2.6e-13")) and not _matches(2.7e-13, _claimed("2.6e-13"))
    assert _matches((0.5123, 0.53449), _claimed("(0.512, 0.534)"))
    assert not _matches((0.5123, 0.53449), _claimed("(0.512, 0.535)"))
    assert _matches("avx2", _claimed("avx2")) and _matches("iid", _claimed("'iid'"))
    assert _matches(True, _claimed("True")) and not _matches(False, _claimed("True"))
    text = "x\n```python\ndef f():\n    return 1\n```\n\n  ```python\n  if f():\n      f()  # -> 1\n  ```\n"
    assert python_blocks(text) == [(3, "def f():\n    return 1\n"), (8, "if f():\n    f()  # -> 1\n")]


def test_failures_name_their_lines(capsys: pytest.CaptureFixture[str]) -> None:
    """A missed claim fails with the page's line numbers; the blocks share one namespace."""
    blocks = [[3, "x = 0.25\n"], [8, "y = 2\nx * y  # -> 0.5\nx + y  # -> 2.4\n"]]
    assert _run({"path": "page.md", "blocks": blocks}) == 1
    err = capsys.readouterr().err
    assert "page.md: the block at lines 8-10 failed" in err
    assert "page.md:10: the text claims 2.4, the code gives 2.25" in err


if __name__ == "__main__":
    sys.exit(_run(json.load(sys.stdin)))
