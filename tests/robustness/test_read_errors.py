"""Files that are not what they claim: the error names the file and what it is, never numpy's
advice to unpickle it (``allow_pickle=True`` would run code from the file)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import mdsd_fast as mf
from mdsd_fast.cli import main


@pytest.fixture
def hostile(tmp_path: Path) -> dict[str, Path]:
    rnd = tmp_path / "random.npz"
    rnd.write_bytes(np.random.default_rng(0).bytes(1000))  # no zip header: numpy tries to unpickle it
    obj = tmp_path / "objects.npz"
    np.savez(obj, format=np.array(["x", 1], dtype=object))  # a member only a pickle can load
    return dict(random=rnd, objects=obj)


@pytest.mark.parametrize(
    "kind, said", [("random", "not an .npz archive"), ("objects", "it holds Python objects")]
)  # fmt: skip
def test_trees_data_names_the_file(
    hostile: dict[str, Path], kind: str, said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["trees", "--data", str(hostile[kind])]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"mdsd-fast trees: error: --data {hostile[kind]}: not a tree file written by extract-trees ({said})"


def test_a_dataset_of_objects_is_named(hostile: dict[str, Path]) -> None:
    with pytest.raises(ValueError) as exc:
        mf.load_dataset(hostile["objects"])
    assert (
        str(exc.value) == f"{hostile['objects']}: not a dataset file (it holds Python objects, which are never loaded)"
    )


@pytest.mark.parametrize("size", [[7], "a", 0, -3, 2.5, True])
def test_dataset_chunk_size_is_named(size: object) -> None:
    ds = mf.from_arrays(np.eye(3), np.eye(3), meta=[dict(domain="d", temperature=1.0)] * 3)
    with pytest.raises(ValueError, match=r"^size: expected a positive integer \(rows per chunk\), got "):
        next(ds.iter_chunks(size))  # type: ignore[arg-type]
