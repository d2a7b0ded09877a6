"""Test-only drafting by enumeration: every drafted tree of a shape with its exact probability.

Independent of the package's drafters on purpose (these are the references the exact
losslessness checks average over). Trees come out as the contract's raw arrays.
"""

from __future__ import annotations

import itertools
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

Row = NDArray[np.float64]
Oracle = Callable[[tuple[int, ...]], tuple[Row, Row]]


def toy_oracle(v: int, seed: int, *, zeros: bool = True) -> Oracle:
    """Deterministic Dirichlet rows seeded by a hash of the prefix, with zeros and ties sometimes."""
    cache: dict[tuple[int, ...], tuple[Row, Row]] = {}

    def oracle(prefix: tuple[int, ...]) -> tuple[Row, Row]:
        if prefix not in cache:
            rng = np.random.default_rng(zlib.crc32(repr((seed, prefix)).encode()))
            rows = rng.dirichlet(np.full(v, 0.7), size=2)
            for r in rows:
                if zeros and rng.random() < 0.3:
                    r[rng.integers(v)] = 0.0
                if rng.random() < 0.2:  # a tie
                    a, b = rng.choice(v, 2, replace=False)
                    r[a] = r[b]
                if r.sum() <= 0.0:  # both tokens of a V = 2 row zeroed: keep one
                    r[0] = 1.0
                r /= r.sum()
            cache[prefix] = (rows[0], rows[1])
        return cache[prefix]

    return oracle


@dataclass
class Node:
    prefix: tuple[int, ...]
    draws: list[int] = field(default_factory=list)  # tokens in draw order (repeats allowed)
    kids: dict[int, Node] = field(default_factory=dict)
    scheme: str = ""


def to_arrays(root: Node, oracle: Oracle) -> dict[str, object]:
    """Contract arrays (parent, token, p, q, draw_ptr, draw_child, scheme) of a drafted tree."""
    order: list[Node] = []
    parent: list[int] = []
    stack: list[tuple[Node, int]] = [(root, -1)]
    while stack:  # pre-order keeps parent[i] < i
        node, par = stack.pop()
        order.append(node)
        parent.append(par)
        me = len(order) - 1
        for t in reversed(list(node.kids)):
            stack.append((node.kids[t], me))
    ident = {id(n): k for k, n in enumerate(order)}
    ptr, child = [0], []
    for n in order:
        child += [ident[id(n.kids[t])] for t in n.draws]
        ptr.append(len(child))
    rows = [oracle(n.prefix) for n in order]
    return {
        "parent": np.array(parent, dtype=np.int64),
        "token": np.array([-1] + [n.prefix[-1] for n in order[1:]], dtype=np.int64),
        "p": np.array([r[0] for r in rows]),
        "q": np.array([r[1] for r in rows]),
        "draw_ptr": np.array(ptr, dtype=np.int64),
        "draw_child": np.array(child, dtype=np.int64),
        "scheme": [n.scheme if n.draws else "" for n in order],
    }


def _tuples(q: Row, n: int, scheme: str) -> Iterator[tuple[tuple[int, ...], float]]:
    """Every draft tuple of one node and its probability (independent of the package's step law)."""
    v = q.size
    top = sorted(range(v), key=lambda t: (-q[t], t))
    if scheme == "topk":
        yield tuple(top[:n]), 1.0
        return
    m, rest = {"iid": (0, "iid"), "wor": (0, "wor"), "greedy": (n - 1, "iid")}.get(scheme, (None, ""))
    if m is None:
        head, _, tail = scheme.partition("+")
        m, rest = int(head[3:]), tail
    fixed = tuple(top[:m])
    base = q.copy()
    base[list(fixed)] = 0.0
    if base.sum() <= 0:
        return
    base /= base.sum()
    for tail_tokens in itertools.product(range(v), repeat=n - m):
        prob, used = 1.0, 0.0
        for j, t in enumerate(tail_tokens):
            if rest == "wor":
                if t in tail_tokens[:j]:
                    prob = 0.0
                    break
                prob *= base[t] / (1.0 - used)
                used += base[t]
            else:
                prob *= base[t]
        if prob > 0.0:
            yield fixed + tail_tokens, prob


def branching_trees(oracle: Oracle, shape: list[tuple[int, str]]) -> Iterator[tuple[Node, float]]:
    """Per-node branching trees: depth d nodes draw shape[d] = (n, scheme); each distinct child then
    drafts its own subtree independently."""

    def grow(prefix: tuple[int, ...], depth: int) -> Iterator[tuple[Node, float]]:
        if depth == len(shape):
            yield Node(prefix), 1.0
            return
        n, scheme = shape[depth]
        for tup, prob in _tuples(oracle(prefix)[1], n, scheme):
            distinct = list(dict.fromkeys(tup))
            subs = [list(grow(prefix + (t,), depth + 1)) for t in distinct]
            for combo in itertools.product(*subs):
                node = Node(prefix, list(tup), {t: c[0] for t, c in zip(distinct, combo, strict=True)}, scheme)
                yield node, prob * float(np.prod([c[1] for c in combo]))

    yield from grow((), 0)


def kseq_trees(oracle: Oracle, k: int, length: int) -> Iterator[tuple[Node, float]]:
    """K i.i.d. draft sequences of the given length merged into a trie (SpecTr): the m sequences
    through a node draw its tuple, in sequence order."""
    v = oracle(())[0].size
    for seqs in itertools.product(itertools.product(range(v), repeat=length), repeat=k):
        prob = 1.0
        for s in seqs:
            for d in range(length):
                prob *= oracle(s[:d])[1][s[d]]
        if prob == 0.0:
            continue
        root = Node(())
        for s in seqs:
            node = root
            for d in range(length):
                node.draws.append(s[d])
                node.scheme = "iid"
                node = node.kids.setdefault(s[d], Node(s[: d + 1]))
        yield root, prob


def target_law(oracle: Oracle, length: int) -> dict[tuple[int, ...], float]:
    """The target's law of the first ``length`` tokens (product of p along the sequence)."""
    out: dict[tuple[int, ...], float] = {}
    v = oracle(())[0].size
    for s in itertools.product(range(v), repeat=length):
        prob = 1.0
        for d in range(length):
            prob *= oracle(s[:d])[0][s[d]]
        out[s] = prob
    return out


def completed(oracle: Oracle, emitted: dict[tuple[int, ...], float], length: int) -> dict[tuple[int, ...], float]:
    """The law of ``length`` tokens: the emitted tokens, then sampling from the target."""
    out: dict[tuple[int, ...], float] = {}

    def extend(seq: tuple[int, ...], prob: float) -> None:
        if len(seq) >= length:
            out[seq[:length]] = out.get(seq[:length], 0.0) + prob
            return
        for t, pt in enumerate(oracle(seq)[0]):
            if pt > 0.0:
                extend(seq + (t,), prob * pt)

    for seq, prob in emitted.items():
        extend(seq, prob)
    return out


def max_deviation(a: dict[tuple[int, ...], float], b: dict[tuple[int, ...], float]) -> float:
    return max(abs(a.get(s, 0.0) - b.get(s, 0.0)) for s in set(a) | set(b))
