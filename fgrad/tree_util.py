"""Pytrees: nested containers split into a flat list of leaves and a hashable structure.

Role: fgrad's transforms accept and return any nesting of tuples, lists, dicts, ``None``,
namedtuples and user-registered types. They flatten it here, once, at the API edge, so the
core and the rules only ever see flat lists of leaves. ``PyTreeDef`` is everything that is
not a leaf: it is hashable, so it can key caches, and ``unflatten`` rebuilds the containers
around new leaves (the gradients, say).

Imports: the standard library only. This module is at the bottom of the import graph, so it
must not import numpy or any other fgrad module; an array is a leaf like any other object
that is not a registered node.

Semantics and names follow ``jax.tree_util``: dict children come in sorted key order,
``None`` is a node with no children (so it holds no leaf), any tuple subclass with
``_fields`` is a namedtuple node rebuilt as its own class, and ``is_leaf`` is asked first,
at every subtree.

Dict order: because dict children come in sorted key order, every transform calls the
function with its dict arguments rebuilt in sorted order, and ``jit`` returns dicts in that
order (JAX does the same). This is the one place where tracing changes what the function
sees: code that reads ``d.values()``, ``d.items()`` or unpacks a dict in insertion order
computes something else under ``grad``, ``jit`` or ``vmap``. Read dicts by key, or use an
``OrderedDict``, whose insertion order is its structure.

Key paths name a leaf by the keys on the way to it (``tree_flatten_with_path``, ``keystr``):
``['w'][0]``; fgrad's error messages name leaves that way.

>>> from fgrad.tree_util import tree_flatten, tree_unflatten
>>> leaves, treedef = tree_flatten((1.0, {'b': None, 'a': [2.0, 3.0]}))
>>> leaves
[1.0, 2.0, 3.0]
>>> treedef
PyTreeDef((*, {'a': [*, *], 'b': None}))
>>> tree_unflatten(treedef, [x * 10 for x in leaves])
(10.0, {'a': [20.0, 30.0], 'b': None})
"""

from __future__ import annotations

import dataclasses
import functools
from collections import OrderedDict, defaultdict
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Hashable, Iterable
    from typing import Any, TypeAlias

    # The names fgrad's signatures use for values, for their readers: to a type checker both
    # are Any. A pytree is any nesting of the nodes above; a leaf (an ArrayLike) is a NumPy
    # array or scalar, a Python number, a traced value (core.Box) or another library's array
    # (Dask's), which share no static type that NumPy's stubs or the rules' bodies could use.
    # They live here, under TYPE_CHECKING, because every module that takes pytrees may import
    # tree_util (tests/test_core.py's import rules) and they cost `import fgrad` nothing.
    PyTree: TypeAlias = Any
    ArrayLike: TypeAlias = Any

__all__ = [
    "DictKey",
    "FlattenedIndexKey",
    "GetAttrKey",
    "Partial",
    "PyTreeDef",
    "SequenceKey",
    "all_leaves",
    "keystr",
    "register_dataclass",
    "register_pytree_node",
    "register_pytree_node_class",
    "tree_all",
    "tree_flatten",
    "tree_flatten_with_path",
    "tree_leaves",
    "tree_leaves_with_path",
    "tree_map",
    "tree_map_with_path",
    "tree_reduce",
    "tree_structure",
    "tree_transpose",
    "tree_unflatten",
]


# --- key paths: how a leaf is reached from the root, one key per node on the way ----------------


@dataclasses.dataclass(frozen=True)
class SequenceKey:
    """The key of a tuple's or list's child: its index. Prints as ``[0]``."""

    idx: int

    def __str__(self) -> str:
        return f"[{self.idx!r}]"


@dataclasses.dataclass(frozen=True)
class DictKey:
    """The key of a dict's (OrderedDict's, defaultdict's) child. Prints as ``['a']``."""

    key: Hashable

    def __str__(self) -> str:
        return f"[{self.key!r}]"


@dataclasses.dataclass(frozen=True)
class GetAttrKey:
    """The key of a namedtuple's field or a registered dataclass's field. Prints as ``.w``."""

    name: str

    def __str__(self) -> str:
        return f".{self.name}"


@dataclasses.dataclass(frozen=True)
class FlattenedIndexKey:
    """The key of a child of a type registered with ``register_pytree_node``, which names its
    children only by their position among the children its flatten_func returns. Prints as
    ``[<flat index 0>]``."""

    key: int

    def __str__(self) -> str:
        return f"[<flat index {self.key}>]"


def keystr(keys: Iterable[Any], *, simple: bool = False, separator: str = "") -> str:
    """A key path as text, as ``jax.tree_util.keystr`` writes it.

    Parameters
    ----------
    keys : tuple of keys
        A path from ``tree_flatten_with_path``: ``SequenceKey``, ``DictKey``, ``GetAttrKey``
        or ``FlattenedIndexKey`` objects.
    simple : bool, default False
        Write each key bare (the index, the dict key, the attribute's name) instead of as
        Python would subscript or read it.
    separator : str, default ""
        Put between the keys.

    Examples
    --------
    >>> from fgrad.tree_util import DictKey, GetAttrKey, SequenceKey, keystr
    >>> keystr((DictKey('a'), SequenceKey(0), GetAttrKey('w')))
    "['a'][0].w"
    >>> keystr((DictKey('a'), SequenceKey(0), GetAttrKey('w')), simple=True, separator='/')
    'a/0/w'
    """
    text = _simple_key if simple else str
    return separator.join(text(k) for k in keys)


def _simple_key(key):
    for field in ("key", "idx", "name"):
        if hasattr(key, field):
            return str(getattr(key, field))
    return str(key)


class _Node:
    """How one container type splits into children and is rebuilt from them.

    ``flatten(x) -> (children, aux)`` gives a sized, iterable ``children``;
    ``unflatten(aux, children) -> x`` gets them back as a list; ``show`` serves ``repr``, and
    ``child_key(aux, i)`` gives child i's key (a ``SequenceKey``, ``DictKey``, ...) for key
    paths and error messages.
    """

    __slots__ = ("child_key", "flatten", "show", "type", "unflatten")

    def __init__(self, type_, flatten, unflatten, show, child_key):
        self.type = type_
        self.flatten = flatten
        self.unflatten = unflatten
        self.show = show
        self.child_key = child_key


# type -> _Node, or None for "this type is a leaf". Leaf types and namedtuple classes are
# cached here the first time they are seen, so classifying any object on the hot path is a
# single dict lookup on type(x). The cache holds one entry per distinct type, which is small
# in practice; register_pytree_node overwrites a cached entry.
_nodes: dict[type, _Node | None] = {}
# The types given to register_pytree_node, built-ins included: registering one twice is an
# error, whereas replacing a cached leaf or namedtuple entry is not.
_registered: set[type] = set()
_UNSEEN = object()


def _classify(t):
    """Cache and return the node for a type not seen before (None if it is a leaf type)."""
    node = _namedtuple_node(t) if issubclass(t, tuple) and hasattr(t, "_fields") else None
    _nodes[t] = node
    return node


def _index_key(aux, i):
    return SequenceKey(i)


def _dict_key(aux, i):
    return DictKey(aux[i])


def _show_items(keys, children):
    return "{" + ", ".join(f"{k!r}: {c}" for k, c in zip(keys, children)) + "}"


def _show_tuple(aux, children):
    return f"({children[0]},)" if len(children) == 1 else "(" + ", ".join(children) + ")"


def _sorted_keys(d):
    try:
        return tuple(sorted(d))
    except TypeError:
        raise TypeError(
            f"cannot flatten a {type(d).__name__} whose keys cannot be sorted "
            f"({', '.join(sorted({type(k).__name__ for k in d}))}): the children of a dict "
            "node are taken in sorted key order. Use keys of one comparable type, or an "
            "OrderedDict, whose insertion order is kept."
        ) from None


def _flatten_dict(d):
    keys = _sorted_keys(d)
    return [d[k] for k in keys], keys


def _flatten_ordereddict(d):
    keys = tuple(d)
    return [d[k] for k in keys], keys


def _flatten_defaultdict(d):
    keys = _sorted_keys(d)
    return [d[k] for k in keys], (d.default_factory, keys)


def _show_defaultdict(aux, children):
    factory, keys = aux
    name = getattr(factory, "__name__", repr(factory))
    return f"defaultdict({name}, {_show_items(keys, children)})"


def _namedtuple_node(cls):
    fields = cls._fields
    return _Node(
        cls,
        lambda x: (x, None),
        lambda aux, children: cls(*children),
        lambda aux, children: (
            f"{cls.__name__}(" + ", ".join(f"{f}={c}" for f, c in zip(fields, children)) + ")"
        ),
        lambda aux, i: GetAttrKey(fields[i]),
    )


def _flat_index_key(aux, i):
    return FlattenedIndexKey(i)


def _custom_node(nodetype, flatten_func, unflatten_func, child_key=_flat_index_key):
    name = nodetype.__name__

    def flatten(x):
        result = flatten_func(x)
        try:
            children, aux = result
        except (TypeError, ValueError):
            raise TypeError(
                f"the flatten_func registered for {name} must return a pair "
                f"(children, aux_data); it returned {result!r:.80}"
            ) from None
        return tuple(children), aux

    return _Node(
        nodetype,
        flatten,
        lambda aux, children: unflatten_func(aux, tuple(children)),
        lambda aux, children: f"CustomNode({name}[{aux!r}], [{', '.join(children)}])",
        child_key,
    )


def _register(node):
    _nodes[node.type] = node
    _registered.add(node.type)


def _show_list(aux, c):
    return "[" + ", ".join(c) + "]"


_TUPLE = _Node(tuple, lambda x: (x, None), lambda aux, c: tuple(c), _show_tuple, _index_key)
_register(_TUPLE)
_LIST = _Node(list, lambda x: (x, None), lambda aux, c: c, _show_list, _index_key)
_register(_LIST)
_DICT = _Node(dict, _flatten_dict, lambda aux, c: dict(zip(aux, c)), _show_items, _dict_key)
_register(_DICT)
_register(
    _Node(type(None), lambda x: ((), None), lambda aux, c: None, lambda aux, c: "None", _index_key)
)
_register(
    _Node(
        OrderedDict,
        _flatten_ordereddict,
        lambda aux, c: OrderedDict(zip(aux, c)),
        lambda aux, c: f"OrderedDict({_show_items(aux, c)})",
        _dict_key,
    )
)
_register(
    _Node(
        defaultdict,
        _flatten_defaultdict,
        lambda aux, c: defaultdict(aux[0], zip(aux[1], c)),
        _show_defaultdict,
        lambda aux, i: DictKey(aux[1][i]),
    )
)


def register_pytree_node(
    nodetype: type,
    flatten_func: Callable[[Any], tuple[Iterable[Any], Hashable]],
    unflatten_func: Callable[[Any, list[Any]], Any],
) -> None:
    """Make instances of ``nodetype`` pytree nodes instead of leaves.

    Parameters
    ----------
    nodetype : type
        The class to register; each type may be registered once.
    flatten_func : callable
        ``flatten_func(x)`` returns ``(children, aux_data)``: an iterable of children, which are
        flattened in turn, and hashable, comparable data needed to rebuild ``x``.
    unflatten_func : callable
        ``unflatten_func(aux_data, children)`` rebuilds ``x``.

    Notes
    -----
    Two structures are equal only if their ``aux_data`` compare equal. Every transform then
    accepts and returns instances of ``nodetype`` as containers of arrays.

    Examples
    --------
    >>> from fgrad.tree_util import register_pytree_node, tree_flatten
    >>> class Scaled:
    ...     def __init__(self, value, unit):
    ...         self.value, self.unit = value, unit
    >>> register_pytree_node(Scaled, lambda s: ((s.value,), s.unit),
    ...                      lambda unit, children: Scaled(children[0], unit))
    >>> tree_flatten(Scaled(2.0, 'm'))
    ([2.0], PyTreeDef(CustomNode(Scaled['m'], [*])))
    """
    _check_registration(nodetype, flatten_func, unflatten_func)
    _register(_custom_node(nodetype, flatten_func, unflatten_func))


def _check_registration(nodetype, flatten_func, unflatten_func):
    if not isinstance(nodetype, type):
        raise TypeError(
            f"register_pytree_node expects a class as nodetype, got {nodetype!r:.80}; "
            "pass the class itself, not an instance"
        )
    if not callable(flatten_func) or not callable(unflatten_func):
        raise TypeError(
            "register_pytree_node(nodetype, flatten_func, unflatten_func) needs two "
            "functions: flatten_func(x) -> (children, aux_data) and "
            "unflatten_func(aux_data, children) -> x"
        )
    if nodetype in _registered:
        raise ValueError(
            f"{nodetype.__qualname__} is already registered as a pytree node; register "
            "each type once, next to its definition"
        )


def register_pytree_node_class(cls: type) -> type:
    """Register a class that flattens itself, and return it (a class decorator).

    The class defines ``tree_flatten(self) -> (children, aux_data)`` and the classmethod
    ``tree_unflatten(cls, aux_data, children)``, as for ``register_pytree_node``.

    Examples
    --------
    >>> from fgrad.tree_util import register_pytree_node_class, tree_leaves
    >>> @register_pytree_node_class
    ... class Pair:
    ...     def __init__(self, a, b):
    ...         self.a, self.b = a, b
    ...     def tree_flatten(self):
    ...         return (self.a, self.b), None
    ...     @classmethod
    ...     def tree_unflatten(cls, aux_data, children):
    ...         return cls(*children)
    >>> tree_leaves(Pair(1.0, [2.0, 3.0]))
    [1.0, 2.0, 3.0]
    """
    if (
        not isinstance(cls, type)
        or not hasattr(cls, "tree_flatten")
        or not hasattr(cls, "tree_unflatten")
    ):
        raise TypeError(
            "register_pytree_node_class decorates a class that defines tree_flatten(self) -> "
            "(children, aux_data) and the classmethod tree_unflatten(cls, aux_data, children)"
            f"; got {cls!r:.80}"
        )
    register_pytree_node(cls, lambda x: x.tree_flatten(), cls.tree_unflatten)
    return cls


def register_dataclass(
    nodetype: type,
    data_fields: Iterable[str] | None = None,
    meta_fields: Iterable[str] | None = None,
    drop_fields: Iterable[str] = (),
) -> type:
    """Register a dataclass (or a class built like one) as a node, and return it.

    Parameters
    ----------
    nodetype : type
        The class. Its instances are rebuilt as ``nodetype(**fields)``.
    data_fields : list of str, optional
        The fields that are children (arrays, or pytrees of them), reached by key paths
        ``.name``.
    meta_fields : list of str, optional
        The fields that are part of the structure (aux data): hashable values, compared when
        two structures are. Give both lists, or neither for a dataclass: then the fields
        declared with ``dataclasses.field(metadata={'static': True})`` are meta fields and the
        other fields of its constructor are data fields.
    drop_fields : list of str, optional
        Constructor fields left out of both (the class computes them).

    Examples
    --------
    >>> import dataclasses
    >>> from fgrad.tree_util import register_dataclass, tree_flatten, tree_flatten_with_path
    >>> @register_dataclass
    ... @dataclasses.dataclass
    ... class Params:
    ...     w: float
    ...     b: float
    ...     name: str = dataclasses.field(default='layer', metadata={'static': True})
    >>> tree_flatten(Params(1.0, 2.0))
    ([1.0, 2.0], PyTreeDef(CustomNode(Params[('layer',)], [*, *])))
    >>> tree_flatten_with_path(Params(1.0, 2.0))[0]
    [((GetAttrKey(name='w'),), 1.0), ((GetAttrKey(name='b'),), 2.0)]
    """
    if not isinstance(nodetype, type):
        raise TypeError(
            f"register_dataclass expects a class, got {nodetype!r:.80}; pass the class itself"
        )
    if (data_fields is None) != (meta_fields is None):
        raise TypeError(
            "register_dataclass: give both data_fields and meta_fields, or neither (for a "
            "dataclass, whose fields marked metadata={'static': True} are then the meta fields)"
        )
    dropped = set(drop_fields)
    if data_fields is None or meta_fields is None:
        if not dataclasses.is_dataclass(nodetype):
            raise TypeError(
                f"register_dataclass: {nodetype.__name__} is not a dataclass, so data_fields "
                "and meta_fields cannot be read from it; pass both lists of attribute names"
            )
        kept = [f for f in dataclasses.fields(nodetype) if f.init and f.name not in dropped]
        data_fields = [f.name for f in kept if not f.metadata.get("static", False)]
        meta_fields = [f.name for f in kept if f.metadata.get("static", False)]
    data, meta = tuple(data_fields), tuple(meta_fields)
    if dataclasses.is_dataclass(nodetype):
        init = {f.name for f in dataclasses.fields(nodetype) if f.init} - dropped
        if set(data) | set(meta) != init or len(data) + len(meta) != len(init):
            raise ValueError(
                f"register_dataclass: data_fields {list(data)} and meta_fields {list(meta)} "
                f"must list each field of {nodetype.__name__}'s constructor once "
                f"({sorted(init)}), and drop_fields the others"
            )

    def flatten(x):
        return [getattr(x, name) for name in data], tuple(getattr(x, name) for name in meta)

    def unflatten(aux, children):
        return nodetype(**dict(zip(meta, aux)), **dict(zip(data, children)))

    _check_registration(nodetype, flatten, unflatten)
    _register(_custom_node(nodetype, flatten, unflatten, lambda aux, i: GetAttrKey(data[i])))
    return nodetype


class Partial(functools.partial):
    """``functools.partial`` as a pytree: its arguments are children, the function is the
    structure, so a Partial can be passed into and returned from a transform.

    Examples
    --------
    >>> import operator
    >>> from fgrad.tree_util import Partial, tree_leaves, tree_map
    >>> add_one = Partial(operator.add, 1.0)
    >>> tree_leaves(add_one), add_one(2.0)
    ([1.0], 3.0)
    >>> tree_map(lambda x: x * 10, add_one)(2.0)
    12.0
    """

    def __new__(cls, func, *args, **keywords):
        # functools.partial merges a partial given as func into the new one (its arguments
        # would become children here): the shim keeps exactly these arguments as children.
        if isinstance(func, functools.partial):
            func = _PartialShim(func)
        return super().__new__(cls, func, *args, **keywords)


class _PartialShim:
    """A functools.partial hidden from functools.partial's merging; hashable by identity."""

    __slots__ = ("partial",)

    def __init__(self, partial):
        self.partial = partial

    def __call__(self, *args, **keywords):
        return self.partial(*args, **keywords)


_register(
    _custom_node(
        Partial,
        lambda p: ((p.args, p.keywords), p.func),
        lambda func, children: Partial(func, *children[0], **children[1]),
    )
)


class PyTreeDef:
    """The structure of a pytree: its nodes and their aux data, with ``*`` for each leaf.

    Immutable and hashable; two treedefs are equal when their node types, aux data (such as
    dict keys) and children are. Get one from ``tree_flatten`` or ``tree_structure``.

    >>> from fgrad.tree_util import tree_structure
    >>> treedef = tree_structure({'w': 1.0, 'b': [2.0, 3.0]})
    >>> treedef, treedef.num_leaves
    (PyTreeDef({'b': [*, *], 'w': *}), 3)
    >>> treedef.unflatten(['B0', 'B1', 'W'])
    {'b': ['B0', 'B1'], 'w': 'W'}
    >>> treedef == tree_structure({'b': [0, 0], 'w': 0})
    True
    """

    # _node is None for a leaf. Immutable the way fractions.Fraction is: private slots
    # written only by _treedef, read-only public properties and no __dict__. Overriding
    # __setattr__ instead would make every construction go through object.__setattr__,
    # which made building a treedef three times slower (it is built on every flatten).
    __slots__ = ("_aux", "_children", "_flat", "_hash", "_node", "_num_leaves")
    _aux: Hashable
    _children: tuple[PyTreeDef, ...]
    _flat: bool
    _hash: int | None
    _node: _Node | None
    _num_leaves: int

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError(
            "PyTreeDef is not built directly; get one from tree_structure(example_tree) "
            "or tree_flatten(example_tree)"
        )

    @property
    def num_leaves(self) -> int:
        """The number of leaves (``*``) in the structure."""
        return self._num_leaves

    @property
    def num_nodes(self) -> int:
        """The number of nodes, leaves included: ``(*, [*, *])`` has 5, ``*`` and ``None`` 1.

        >>> from fgrad.tree_util import tree_structure
        >>> tree_structure((1.0, [2.0, 3.0])).num_nodes
        5
        """
        return 1 + sum(c.num_nodes for c in self._children)

    def children(self) -> list[PyTreeDef]:
        """The structures of the root's children, in order (none for a leaf).

        >>> from fgrad.tree_util import tree_structure
        >>> tree_structure({'b': [1.0, 2.0], 'a': 3.0}).children()
        [PyTreeDef(*), PyTreeDef([*, *])]
        """
        return list(self._children)

    def unflatten(self, leaves: Iterable[Any]) -> PyTree:
        """Rebuild a tree of this structure around ``leaves``, taken in order.

        >>> from fgrad.tree_util import tree_structure
        >>> tree_structure((0, [0, 0])).unflatten([1, 2, 3])
        (1, [2, 3])
        """
        if type(leaves) is not list and type(leaves) is not tuple:
            try:
                leaves = list(leaves)
            except TypeError:
                raise TypeError(
                    f"unflatten expects an iterable of leaves, got {type(leaves).__name__}"
                ) from None
        if len(leaves) != self._num_leaves:
            raise ValueError(
                f"{self!r} expected {self._num_leaves} leaves, got {len(leaves)}; "
                "pass exactly one leaf per * in the structure"
            )
        node = self._node
        if node is None:
            return leaves[0]
        if self._flat:  # a tuple or list of leaves (a function's arguments, often): one call
            if node is _TUPLE:
                return tuple(leaves)
            if node is _LIST:
                return list(leaves)
        return _build(self, iter(leaves))

    def flatten_up_to(self, tree: PyTree) -> list[PyTree]:
        """Flatten ``tree`` only as deep as this structure: each leaf here takes a whole
        subtree of ``tree``. Raises ValueError if ``tree`` does not have this structure's
        nodes.

        >>> from fgrad.tree_util import tree_structure
        >>> tree_structure([0, 0]).flatten_up_to([(1, 2), {'a': 3}])
        [(1, 2), {'a': 3}]
        """
        leaves: list[PyTree] = []
        try:
            _flatten_up_to(self, tree, leaves)
        except _Mismatch as e:
            raise ValueError(
                f"flatten_up_to: the tree does not have the structure {self!r} "
                f"at {e.where()}: {e}. The tree's structure is {tree_structure(tree)!r}."
            ) from None
        return leaves

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, PyTreeDef):
            return NotImplemented
        return (
            self._node is other._node
            and self._num_leaves == other._num_leaves
            and self._aux == other._aux
            and self._children == other._children
        )

    def __hash__(self) -> int:
        h = self._hash
        if h is None:
            children_hash = hash(self._children)
            try:
                aux_hash = hash(self._aux)
            except TypeError:
                raise TypeError(
                    f"{self!r} is unhashable because the flatten_func registered for "
                    # a leaf (_node None) has aux None, which hashes: a node is here
                    f"{self._node.type.__name__} returned unhashable aux_data "  # type: ignore[union-attr]
                    f"{self._aux!r:.80}; return hashable aux_data, e.g. a tuple, not a list"
                ) from None
            h = hash((self._node, aux_hash, children_hash))
            self._hash = h
        return h

    def __repr__(self) -> str:
        return f"PyTreeDef({self._show()})"

    def _show(self):
        if self._node is None:
            return "*"
        return self._node.show(self._aux, [c._show() for c in self._children])

    # Immutable, so a copy is the object itself.
    def __copy__(self) -> PyTreeDef:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> PyTreeDef:
        return self


def tree_aux_data(treedef: PyTreeDef) -> list[Hashable]:
    """The aux data of `treedef`'s nodes that have any (not None), depth first: what a cache
    keyed by structures compares beyond `==` (`fgrad.jit`).

    >>> from fgrad.tree_util import tree_aux_data, tree_structure
    >>> tree_aux_data(tree_structure({'b': [0], 'a': (0, None)}))
    [('a', 'b')]
    """
    found: list[Hashable] = []
    stack = [treedef]
    while stack:
        td = stack.pop()
        if td._aux is not None:
            found.append(td._aux)
        stack.extend(reversed(td._children))
    return found


_new = object.__new__


def _treedef(node, aux, children, num_leaves, flat=False):
    """A treedef; `flat` when every child is a leaf."""
    td = _new(PyTreeDef)
    td._node = node
    td._aux = aux
    td._children = children
    td._num_leaves = num_leaves
    td._flat = flat
    td._hash = None
    return td


# The structure of a tree that is one leaf: every flatten of a leaf returns this object, so
# `treedef is LEAF` tells a single value from a container (fgrad's own modules use it; it is
# not exported with the public names).
LEAF = _treedef(None, None, (), 1)

# The structure of an empty dict, shared like LEAF
_EMPTY_DICT = _treedef(_DICT, (), (), 0, flat=True)


# (tuple or list, n) -> the treedef of a tuple or list of n leaves, made on first use, for
# the short ones (a function's arguments, a tuple of parameters): a program flattening lists
# of many lengths must not fill memory with their structures
_flat_treedefs: dict[tuple[type, int], PyTreeDef] = {}
_SHARED_UP_TO = 64


def _flat_treedef(kind, n):
    """The structure of a tuple or list of n leaves."""
    td = _flat_treedefs.get((kind, n))
    if td is None:
        td = _treedef(_TUPLE if kind is tuple else _LIST, None, (LEAF,) * n, n, flat=True)
        if n <= _SHARED_UP_TO:
            _flat_treedefs[(kind, n)] = td
    return td


def _flatten(x, is_leaf, leaves):
    """Append the leaves of ``x`` to ``leaves`` and return its treedef."""
    if is_leaf is not None and is_leaf(x):
        leaves.append(x)
        return LEAF
    kind = type(x)
    if kind is tuple or kind is list:  # the common nodes, without their flatten's call
        node, children, aux = _TUPLE if kind is tuple else _LIST, x, None
    elif kind is dict and not x:  # no keyword arguments (`vmap` flattens them with the others)
        return _EMPTY_DICT
    else:
        node = _nodes.get(kind, _UNSEEN)
        if node is _UNSEEN:
            node = _classify(kind)
        if node is None:
            leaves.append(x)
            return LEAF
        children, aux = node.flatten(x)
    start = len(leaves)
    subtrees = []
    flat = True
    for c in children:
        # Leaf children are handled inline rather than by a recursive call: flattening
        # a flat tuple of arguments is on the hot path of every transform call, and this
        # makes it about a quarter faster.
        if is_leaf is None and _nodes.get(type(c), _UNSEEN) is None:
            leaves.append(c)
            subtrees.append(LEAF)
        else:
            sub = _flatten(c, is_leaf, leaves)
            subtrees.append(sub)
            flat = flat and sub is LEAF
    return _treedef(node, aux, tuple(subtrees), len(leaves) - start, flat)


def _build(treedef, leaves):
    """Rebuild ``treedef`` taking leaves from the iterator ``leaves``."""
    children = []  # a loop, not a comprehension: a comprehension is a call of its own
    for c in treedef._children:
        children.append(next(leaves) if c._node is None else _build(c, leaves))
    node = treedef._node
    if node is _TUPLE:  # the common node, without its unflatten's call
        return tuple(children)
    return node.unflatten(treedef._aux, children)


class _Mismatch(Exception):
    """A tree does not match a treedef; carries the path to where, innermost key last."""

    def __init__(self, detail):
        super().__init__(detail)
        self.path = []

    def where(self):
        return "the root" if not self.path else "tree" + "".join(reversed(self.path))


def _flatten_up_to(treedef, x, leaves):
    node = treedef._node
    if node is None:
        leaves.append(x)
        return
    actual = _nodes.get(type(x), _UNSEEN)
    if actual is _UNSEEN:
        actual = _classify(type(x))
    if actual is not node:
        raise _Mismatch(f"expected {treedef._show():.80}, got {type(x).__name__} {x!r:.80}")
    children, aux = node.flatten(x)
    if aux != treedef._aux:
        raise _Mismatch(f"expected {treedef._show():.80}, got {x!r:.80}")
    if len(children) != len(treedef._children):
        raise _Mismatch(
            f"expected {node.type.__name__} with {len(treedef._children)} children, "
            f"got {len(children)}"
        )
    for i, (child, sub) in enumerate(zip(children, treedef._children)):
        try:
            _flatten_up_to(sub, child, leaves)
        except _Mismatch as e:
            e.path.append(str(node.child_key(treedef._aux, i)))
            raise


def _check_is_leaf(is_leaf):
    if is_leaf is not None and not callable(is_leaf):
        raise TypeError(
            f"is_leaf must be a function of one subtree returning a bool, or None; "
            f"got {type(is_leaf).__name__}"
        )


def tree_flatten(
    tree: PyTree, is_leaf: Callable[[Any], bool] | None = None
) -> tuple[list[ArrayLike], PyTreeDef]:
    """Split ``tree`` into its leaves, in order, and its structure.

    Parameters
    ----------
    tree : pytree
        Tuples, lists, dicts (children by sorted key), namedtuples, ``None`` (a node without
        children) and registered types are nodes; everything else is a leaf.
    is_leaf : callable, optional
        Asked first at every subtree; when it returns true that subtree is a leaf, whatever its
        type.

    Returns
    -------
    leaves : list
        The leaves, in order.
    treedef : PyTreeDef
        The structure, to rebuild a tree with ``tree_unflatten``.

    Examples
    --------
    >>> from fgrad.tree_util import tree_flatten
    >>> tree_flatten([1.0, (2.0, None)])
    ([1.0, 2.0], PyTreeDef([*, (*, None)]))
    >>> tree_flatten([1.0, (2.0, None)], is_leaf=lambda x: isinstance(x, tuple))
    ([1.0, (2.0, None)], PyTreeDef([*, *]))
    """
    if is_leaf is not None:
        _check_is_leaf(is_leaf)
    else:
        kind = type(tree)
        if kind is tuple or kind is list:
            # A tuple or list of leaves (parameters, a function's arguments): its structure
            # is shared, made once per length (a treedef is immutable).
            for c in tree:
                if _nodes.get(type(c), _UNSEEN) is not None:  # a node, or a type not yet seen
                    break
            else:
                return list(tree), _flat_treedef(kind, len(tree))
        elif _nodes.get(kind, _UNSEEN) is None:  # a leaf (a function's one output, often)
            return [tree], LEAF
    leaves: list[ArrayLike] = []
    treedef = _flatten(tree, is_leaf, leaves)
    return leaves, treedef


def tree_unflatten(treedef: PyTreeDef, leaves: Iterable[Any]) -> PyTree:
    """Rebuild a tree of structure ``treedef`` around ``leaves``.

    Parameters
    ----------
    treedef : PyTreeDef
        A structure, from ``tree_flatten`` or ``tree_structure``.
    leaves : iterable
        One leaf per ``*`` of the structure, in order.

    Returns
    -------
    pytree
        The tree.

    Examples
    --------
    >>> from fgrad.tree_util import tree_flatten, tree_unflatten
    >>> leaves, treedef = tree_flatten({'a': 1, 'b': (2, 3)})
    >>> tree_unflatten(treedef, [4, 5, 6])
    {'a': 4, 'b': (5, 6)}
    """
    if not isinstance(treedef, PyTreeDef):
        raise TypeError(
            f"tree_unflatten(treedef, leaves) expects a PyTreeDef first, got "
            f"{type(treedef).__name__}; get one from tree_flatten or tree_structure "
            "(and check the argument order)"
        )
    return treedef.unflatten(leaves)


def tree_leaves(tree: PyTree, is_leaf: Callable[[Any], bool] | None = None) -> list[ArrayLike]:
    """The leaves of ``tree``, in order (dict children by sorted key).

    Parameters
    ----------
    tree : pytree
        Any pytree.
    is_leaf : callable, optional
        As in ``tree_flatten``.

    Returns
    -------
    list
        The leaves.

    Examples
    --------
    >>> from fgrad.tree_util import tree_leaves
    >>> tree_leaves({'b': 1, 'a': [2, None, 3]})
    [2, 3, 1]
    """
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree: PyTree, is_leaf: Callable[[Any], bool] | None = None) -> PyTreeDef:
    """The ``PyTreeDef`` of ``tree``.

    Parameters
    ----------
    tree : pytree
        Any pytree.
    is_leaf : callable, optional
        As in ``tree_flatten``.

    Returns
    -------
    PyTreeDef
        Its structure.

    Examples
    --------
    >>> from fgrad.tree_util import tree_structure
    >>> tree_structure((1, {'a': 2, 'b': None}))
    PyTreeDef((*, {'a': *, 'b': None}))
    """
    return tree_flatten(tree, is_leaf)[1]


def tree_map(
    f: Callable[..., Any],
    tree: PyTree,
    *rest: PyTree,
    is_leaf: Callable[[Any], bool] | None = None,
) -> PyTree:
    """Apply ``f`` leafwise and rebuild the structure of ``tree`` around the results.

    Parameters
    ----------
    f : callable
        Called with one leaf of ``tree`` and the matching part of each of ``rest``.
    tree : pytree
        Gives the structure of the result.
    *rest : pytree
        Other trees with the structure of ``tree`` up to its leaves: where ``tree`` has a leaf
        they may have a whole subtree, which ``f`` receives as is.
    is_leaf : callable, optional
        As in ``tree_flatten``.

    Returns
    -------
    pytree
        The results of ``f``, in the structure of ``tree``.

    Examples
    --------
    >>> from fgrad.tree_util import tree_map
    >>> tree_map(lambda x: x * 2, {'a': 1, 'b': (2, None)})
    {'a': 2, 'b': (4, None)}
    >>> tree_map(lambda x, y: x + y, [1, 2], [10, 20])
    [11, 22]
    >>> tree_map(lambda x, y: (x, y), [1, 2], [(3, 4), {'a': 5}])
    [(1, (3, 4)), (2, {'a': 5})]
    """
    if not callable(f):
        raise TypeError(
            f"tree_map's first argument must be the function to apply, got {f!r} of type "
            f"{type(f).__name__}; call tree_map(f, tree)"
        )
    leaves, treedef = tree_flatten(tree, is_leaf)
    if not rest:
        return treedef.unflatten([f(x) for x in leaves])
    all_leaves = [leaves, *_leaves_up_to(treedef, rest, is_leaf, "tree_map")]
    return treedef.unflatten([f(*xs) for xs in zip(*all_leaves)])


def _leaves_up_to(treedef, rest, is_leaf, who):
    """The subtrees of each tree of ``rest`` at the leaves of ``treedef`` (tree 0's)."""
    per_tree = []
    for i, other in enumerate(rest, 1):
        other_leaves: list[PyTree] = []
        try:
            _flatten_up_to(treedef, other, other_leaves)
        except _Mismatch as e:
            raise ValueError(
                f"{who}: tree {i} does not match the structure of tree 0 (the first tree, "
                f"counting from 0) at {e.where()}: {e}.\n"
                f"  tree 0 is {treedef!r}\n"
                f"  tree {i} is {tree_structure(other, is_leaf)!r}\n"
                "Pass trees with the same containers and dict keys; where tree 0 has a "
                "leaf, the others may have any subtree."
            ) from None
        per_tree.append(other_leaves)
    return per_tree


def leaf_paths(treedef: PyTreeDef) -> list[tuple[Any, ...]]:
    """The key path of each leaf of ``treedef``, in order (``()`` for a tree that is a leaf).

    >>> from fgrad.tree_util import keystr, leaf_paths, tree_structure
    >>> [keystr(p) for p in leaf_paths(tree_structure({'w': [1.0, 2.0], 'b': 3.0}))]
    ["['b']", "['w'][0]", "['w'][1]"]
    """
    paths: list[tuple[Any, ...]] = []

    def walk(td, prefix):
        if td._node is None:
            paths.append(prefix)
            return
        for i, child in enumerate(td._children):
            walk(child, (*prefix, td._node.child_key(td._aux, i)))

    walk(treedef, ())
    return paths


def tree_flatten_with_path(
    tree: PyTree, is_leaf: Callable[[Any], bool] | None = None
) -> tuple[list[tuple[tuple[Any, ...], ArrayLike]], PyTreeDef]:
    """``tree_flatten``, with each leaf paired with its key path.

    A key path is a tuple of keys, one per node from the root to the leaf: ``SequenceKey(i)``
    for a tuple's or list's child, ``DictKey(k)`` for a dict's, ``GetAttrKey(name)`` for a
    namedtuple's or a registered dataclass's field, ``FlattenedIndexKey(i)`` for a child of
    another registered type. ``keystr`` writes it as text.

    Examples
    --------
    >>> from fgrad.tree_util import keystr, tree_flatten_with_path
    >>> pairs, treedef = tree_flatten_with_path({'w': [1.0, 2.0], 'b': None})
    >>> pairs
    [((DictKey(key='w'), SequenceKey(idx=0)), 1.0), ((DictKey(key='w'), SequenceKey(idx=1)), 2.0)]
    >>> [keystr(path) for path, _ in pairs]
    ["['w'][0]", "['w'][1]"]
    """
    leaves, treedef = tree_flatten(tree, is_leaf)
    return list(zip(leaf_paths(treedef), leaves)), treedef


def tree_leaves_with_path(
    tree: PyTree, is_leaf: Callable[[Any], bool] | None = None
) -> list[tuple[tuple[Any, ...], ArrayLike]]:
    """The leaves of ``tree`` with their key paths, as ``tree_flatten_with_path`` gives them.

    >>> from fgrad.tree_util import tree_leaves_with_path
    >>> tree_leaves_with_path((1.0, [2.0]))
    [((SequenceKey(idx=0),), 1.0), ((SequenceKey(idx=1), SequenceKey(idx=0)), 2.0)]
    """
    return tree_flatten_with_path(tree, is_leaf)[0]


def tree_map_with_path(
    f: Callable[..., Any],
    tree: PyTree,
    *rest: PyTree,
    is_leaf: Callable[[Any], bool] | None = None,
) -> PyTree:
    """``tree_map``, with ``f`` given each leaf's key path first: ``f(path, x, *xs)``.

    >>> from fgrad.tree_util import keystr, tree_map_with_path
    >>> tree_map_with_path(lambda path, x: f"{keystr(path)}={x}", {'a': 1, 'b': (2,)})
    {'a': "['a']=1", 'b': ("['b'][0]=2",)}
    """
    if not callable(f):
        raise TypeError(
            f"tree_map_with_path's first argument must be the function to apply, got {f!r} of "
            f"type {type(f).__name__}; call tree_map_with_path(f, tree)"
        )
    leaves, treedef = tree_flatten(tree, is_leaf)
    columns = [leaf_paths(treedef), leaves, *_leaves_up_to(treedef, rest, is_leaf, "tree_map")]
    return treedef.unflatten([f(*xs) for xs in zip(*columns)])


_NO_INITIALIZER = object()


def tree_reduce(
    function: Callable[[Any, Any], Any],
    tree: PyTree,
    initializer: Any = _NO_INITIALIZER,
    is_leaf: Callable[[Any], bool] | None = None,
) -> Any:
    """``functools.reduce(function, tree_leaves(tree), initializer)``: the leaves, in order,
    folded into one value. Without an initializer, a tree with no leaves is a TypeError.

    >>> import operator
    >>> from fgrad.tree_util import tree_reduce
    >>> tree_reduce(operator.add, {'a': 1, 'b': [2, 3]})
    6
    >>> tree_reduce(max, [], initializer=0)
    0
    """
    leaves = tree_leaves(tree, is_leaf)
    if initializer is _NO_INITIALIZER:
        return functools.reduce(function, leaves)
    return functools.reduce(function, leaves, initializer)


def tree_all(tree: PyTree, *, is_leaf: Callable[[Any], bool] | None = None) -> bool:
    """Whether every leaf of ``tree`` is true (``all(tree_leaves(tree))``; true for no leaves).

    >>> from fgrad.tree_util import tree_all
    >>> tree_all({'a': True, 'b': [1, None]}), tree_all([True, 0])
    (True, False)
    """
    return all(tree_leaves(tree, is_leaf))


def all_leaves(iterable: Iterable[Any], is_leaf: Callable[[Any], bool] | None = None) -> bool:
    """Whether every element of ``iterable`` is a leaf (``None`` is a node, with no leaf).

    With ``is_leaf``, JAX's definition: the list of the elements is its own `tree_leaves`
    under ``is_leaf``, which is also asked about that list (``is_leaf`` true for lists makes
    ``all_leaves([[1]], is_leaf)`` False: the list itself is then the one leaf).

    >>> from fgrad.tree_util import all_leaves
    >>> all_leaves([1.0, 'a']), all_leaves([1.0, (2.0,)]), all_leaves([None])
    (True, False, False)
    """
    if is_leaf is None:
        return all(tree_structure(x) is LEAF for x in iterable)
    elements = list(iterable)
    leaves = tree_leaves(elements, is_leaf)
    return len(leaves) == len(elements) and all(a is b for a, b in zip(leaves, elements))


def tree_transpose(
    outer_treedef: PyTreeDef, inner_treedef: PyTreeDef | None, pytree_to_transpose: PyTree
) -> PyTree:
    """Turn a tree of structure outer-of-inner into one of structure inner-of-outer.

    ``pytree_to_transpose`` is ``outer_treedef`` with a tree of structure ``inner_treedef`` at
    each of its leaves; the result is ``inner_treedef`` with a tree of structure
    ``outer_treedef`` at each leaf. ``inner_treedef=None`` takes the structure of the first
    inner tree.

    >>> from fgrad.tree_util import tree_structure, tree_transpose
    >>> pairs = [(1, 'a'), (2, 'b'), (3, 'c')]
    >>> tree_transpose(tree_structure([0, 0, 0]), tree_structure((0, 0)), pairs)
    ([1, 2, 3], ['a', 'b', 'c'])
    """
    inner_trees = outer_treedef.flatten_up_to(pytree_to_transpose)
    if inner_treedef is None:
        inner_treedef = tree_structure(inner_trees[0]) if inner_trees else LEAF
    inner_leaves = []
    for k, inner in enumerate(inner_trees):
        leaves, treedef = tree_flatten(inner)
        if treedef != inner_treedef:
            path = keystr(leaf_paths(outer_treedef)[k]) or "the root"
            raise TypeError(
                f"tree_transpose: the inner tree at {path} has structure {treedef!r}, not "
                f"inner_treedef {inner_treedef!r}; every leaf of outer_treedef must hold a "
                "tree of structure inner_treedef"
            )
        inner_leaves.append(leaves)
    columns = zip(*inner_leaves) if inner_leaves else [()] * inner_treedef.num_leaves
    return inner_treedef.unflatten([outer_treedef.unflatten(c) for c in columns])


def structure_difference(given: PyTree, expected: PyTree) -> str | None:
    """Where the pytree `given` first departs from the structure of the pytree `expected`, as
    a path and what is wrong there (`"['b'] is missing"`), for error messages; None when the
    difference is not in a dict, list or tuple (the caller then shows both structures)."""

    def walk(g, e, path):
        where = path or "the top level"
        if isinstance(e, dict):
            if not isinstance(g, dict):
                return f"{where} is a {type(g).__name__}, not a dict"
            for key in e:
                if key not in g:
                    return f"{path}[{key!r}] is missing"
            for key in g:
                if key not in e:
                    return f"{path}[{key!r}] is there but not expected"
            return next((d for k in e if (d := walk(g[k], e[k], f"{path}[{k!r}]"))), None)
        if isinstance(e, (list, tuple)):
            if type(g) is not type(e):
                return f"{where} is a {type(g).__name__}, not a {type(e).__name__}"
            if len(g) != len(e):
                return f"{where} has {len(g)} entries, not {len(e)}"
            return next(
                (d for i, (a, b) in enumerate(zip(g, e)) if (d := walk(a, b, f"{path}[{i}]"))), None
            )
        return None

    return walk(given, expected, "")


class LeafName:
    """How an error names leaf ``k`` of ``treedef``: ``name`` followed by the leaf's key path
    (``tangents[1]['w']``, or ``the cotangent at ['z']`` with ``sep=" at "``), just ``name``
    for a tree that is one leaf. The path is found only when the message is written."""

    __slots__ = ("k", "name", "sep", "treedef")

    def __init__(self, name: str, treedef: PyTreeDef, k: int, sep: str = "") -> None:
        self.name, self.treedef, self.k, self.sep = name, treedef, k, sep

    def __str__(self) -> str:
        path = leaf_paths(self.treedef)[self.k]
        return self.name + self.sep + keystr(path) if path else self.name


def registration_hint(x: Any) -> str:
    """For an error about a value of a user's class reaching a transform as a leaf: how to
    make the class a pytree node, if it holds arrays (empty for a built-in type)."""
    kind = type(x)
    if kind.__module__ == "builtins":
        return ""
    name = kind.__name__
    if dataclasses.is_dataclass(x):
        how = f"fgrad.tree_util.register_dataclass({name})"
    else:
        how = (
            f"fgrad.tree_util.register_pytree_node({name}, flatten, unflatten) or "
            "register_pytree_node_class"
        )
    return f"; if {name} holds arrays, register it as a pytree node: {how}"


def leaves_per_child(treedef: PyTreeDef, *path: int) -> list[int]:
    """The number of leaves under each child of the root of ``treedef`` (for a tuple of
    arguments, one count per argument), or of the node reached by the child indices ``path``.

    >>> from fgrad.tree_util import leaves_per_child, tree_structure
    >>> leaves_per_child(tree_structure((1.0, [2.0, 3.0], None)))
    [1, 2, 0]
    >>> leaves_per_child(tree_structure(((1.0, [2.0, 3.0]), {})), 0)
    [1, 2]
    """
    for i in path:
        treedef = treedef._children[i]
    return [child._num_leaves for child in treedef._children]
