"""The process table's tree view: GPU processes under their parents, like nvitop's `t`.

Pure layout, no Textual: from the table's sorted rows and each PID's parent
chain (read on demand, `gputui.sources.host.source.read_ancestors`) to rows in tree
order with their branch prefixes. Parents that hold no GPU context (a
`torchrun` launcher, a shell) get a row of their own, so the workers of one job
sit together. Siblings keep the table's sort order: a branch sorts where its
first GPU process would.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gputui.model.snapshot import GpuProcess

Ancestors = tuple[tuple[int, str], ...]  # (pid, name), the parent first


@dataclass(frozen=True, slots=True)
class TreeRow:
    key: str  # the table's row key: "GPU:PID" for a process, ":PID" for a parent without a GPU
    pid: int
    prefix: str  # branch lines drawn before the command
    proc: GpuProcess | None = None  # None: a parent that holds no GPU context
    name: str = ""  # a parent's name (a process row shows its command)


def layout(
    rows: Sequence[tuple[str, GpuProcess]], parents: Mapping[int, Ancestors]
) -> list[TreeRow]:
    """`rows` ((key, process) in table order) rearranged as a tree."""
    gpu_rows: dict[int, list[tuple[str, GpuProcess]]] = {}
    for key, proc in rows:
        gpu_rows.setdefault(proc.pid, []).append((key, proc))
    parent: dict[int, int | None] = {}
    names: dict[int, str] = {}
    rank: dict[int, int] = {}  # where a node sorts: its first GPU row in table order
    for i, (_, proc) in enumerate(rows):
        chain = parents.get(proc.pid, ())
        node = proc.pid
        rank.setdefault(node, i)
        for pid, name in chain:
            if node in parent:
                break  # the rest of this chain is known already
            parent[node] = pid
            names.setdefault(pid, name)
            rank.setdefault(pid, i)
            node = pid
        else:
            parent.setdefault(node, None)
    children: dict[int | None, list[int]] = {}
    for node, up in parent.items():
        children.setdefault(up, []).append(node)
    for kids in children.values():
        kids.sort(key=lambda n: rank[n])

    out: list[TreeRow] = []

    def walk(node: int, lead: str, branch: str) -> None:
        prefix = lead + branch
        if node in gpu_rows:
            out.extend(TreeRow(k, node, prefix, proc=p) for k, p in gpu_rows[node])
        else:
            out.append(TreeRow(f":{node}", node, prefix, name=names.get(node, "?")))
        kids = children.get(node, [])
        below = lead + ("" if not branch else ("   " if branch == "└─ " else "│  "))
        for i, kid in enumerate(kids):
            walk(kid, below, "└─ " if i == len(kids) - 1 else "├─ ")

    for root in children.get(None, []):
        walk(root, "", "")
    return out
