"""torch's pytree walks (tree_flatten, tree_map) with their results, made faster for what an op's
arguments almost always are: tuples, lists and dicts of tensors and numbers.

The recorder walks every op's arguments several times, and torch's pytree builds a TreeSpec for each
container on the way, which costs more than the walk. Here tuples, lists and dicts (exactly those
types) are walked directly, in pytree's order (a dict by its insertion order) and rebuilt as pytree
rebuilds them; any other value that pytree treats as a container (torch.Size, namedtuples, ordered
dicts, ...) is handed to pytree itself, and everything else is a leaf, as in pytree.
"""

from __future__ import annotations

from typing import Any, Callable

_leaf_types: dict[type, bool] = {}  # type -> whether pytree treats its values as leaves (it decides by type)
_registered = [-1]  # how many node types pytree knew when _leaf_types was filled
_nodes: list[dict] = []  # pytree's registry of node types (imported on first use: torch loads lazily here)


def _fresh() -> None:
    """Forget what was decided if pytree has learnt node types since (a registration after import)."""
    if not _nodes:
        from torch.utils._pytree import SUPPORTED_NODES

        _nodes.append(SUPPORTED_NODES)
    if _registered[0] != len(_nodes[0]):
        _leaf_types.clear()
        _registered[0] = len(_nodes[0])


def _is_leaf(value: Any) -> bool:
    from torch.utils._pytree import tree_is_leaf

    found = _leaf_types[type(value)] = tree_is_leaf(value)
    return found


def leaves(tree: Any) -> list[Any]:
    """torch.utils._pytree.tree_flatten(tree)[0]."""
    _fresh()
    found: list[Any] = []
    _collect(tree, found)
    return found


def _collect(tree: Any, found: list[Any]) -> None:
    kind = type(tree)
    if kind is tuple or kind is list:
        for item in tree:
            _collect(item, found)
    elif kind is dict:
        for item in tree.values():
            _collect(item, found)
    elif _leaf_types.get(kind) or (kind not in _leaf_types and _is_leaf(tree)):
        found.append(tree)
    else:
        from torch.utils._pytree import tree_flatten

        found.extend(tree_flatten(tree)[0])


def tensor_leaves(tree: Any) -> list[Any]:
    """The tensors among the leaves, in order."""
    import torch

    return [leaf for leaf in leaves(tree) if isinstance(leaf, torch.Tensor)]


def map_leaves(function: Callable[[Any], Any], tree: Any) -> Any:
    """torch.utils._pytree.tree_map(function, tree)."""
    _fresh()
    return _map(function, tree)


def _map(function: Callable[[Any], Any], tree: Any) -> Any:
    kind = type(tree)
    if kind is tuple:
        return tuple([_map(function, item) for item in tree])
    if kind is list:
        return [_map(function, item) for item in tree]
    if kind is dict:
        return {key: _map(function, item) for key, item in tree.items()}
    if _leaf_types.get(kind) or (kind not in _leaf_types and _is_leaf(tree)):
        return function(tree)
    from torch.utils._pytree import tree_map

    return tree_map(function, tree)
