"""Tests for fgrad.tree_util: pytrees of every node kind, checked against a small reference.

Random trees come from a recursive hypothesis strategy over all node kinds; the reference
functions below restate the specification (leaf order, structure identity) independently
of the implementation, so a property test fails if the two disagree.
"""

import ast
import copy
import doctest
import sys
from collections import OrderedDict, defaultdict, namedtuple
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, strategies as st

from fgrad import tree_util
from fgrad.tree_util import (
    PyTreeDef,
    register_pytree_node,
    tree_flatten,
    tree_leaves,
    tree_map,
    tree_structure,
    tree_unflatten,
)

Point = namedtuple("Point", ["x", "y"])
Other = namedtuple("Other", ["x", "y"])


class Box:
    """A user type registered as a node: one child and a hashable label as aux data."""

    def __init__(self, content, label):
        self.content = content
        self.label = label


# The flatten_func returns a list, not a tuple: any iterable of children must do.
register_pytree_node(
    Box, lambda b: ([b.content], b.label), lambda label, children: Box(children[0], label)
)


class Tag:
    """A leaf that records what tree_map passed to f."""

    def __init__(self, *args):
        self.args = args


# --- reference specification ----------------------------------------------------------------------


def reference_leaves(tree):
    if tree is None:
        return []
    if type(tree) in (tuple, list, Point):
        return [leaf for child in tree for leaf in reference_leaves(child)]
    if type(tree) is OrderedDict:
        return [leaf for k in tree for leaf in reference_leaves(tree[k])]
    if type(tree) in (dict, defaultdict):
        return [leaf for k in sorted(tree) for leaf in reference_leaves(tree[k])]
    if type(tree) is Box:
        return reference_leaves(tree.content)
    return [tree]


def reference_structure(tree):
    """A plain nested tuple that is equal for two trees exactly when their structures are."""
    if tree is None:
        return ("None",)
    if type(tree) in (tuple, list, Point):
        return (type(tree).__name__,) + tuple(reference_structure(c) for c in tree)
    if type(tree) in (dict, defaultdict, OrderedDict):
        keys = list(tree) if type(tree) is OrderedDict else sorted(tree)
        children = tuple(reference_structure(tree[k]) for k in keys)
        return (type(tree).__name__, tuple(keys)) + children
    if type(tree) is Box:
        return ("Box", tree.label, reference_structure(tree.content))
    return "*"


def assert_same(a, b):
    """a and b have the same node types, keys and aux data, and the very same leaves."""
    assert type(a) is type(b), (a, b)
    if type(a) in (tuple, list, Point):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            assert_same(x, y)
    elif type(a) in (dict, defaultdict, OrderedDict):
        if type(a) is OrderedDict:
            assert list(a) == list(b)
        assert set(a) == set(b)
        if type(a) is defaultdict:
            assert a.default_factory is b.default_factory
        for k in a:
            assert_same(a[k], b[k])
    elif type(a) is Box:
        assert a.label == b.label
        assert_same(a.content, b.content)
    else:
        assert a is b


def assert_identical(xs, ys):
    assert len(xs) == len(ys)
    assert all(x is y for x, y in zip(xs, ys))


# --- strategies -----------------------------------------------------------------------------------

leaves_st = st.one_of(
    st.integers(),
    st.floats(),
    st.text(max_size=3),
    st.integers(0, 3).map(lambda n: np.arange(n, dtype=float)),
    st.builds(object),
)


def containers(children):
    small = st.lists(children, max_size=3)
    # One key type per dict: dict children are in sorted key order, so keys must compare.
    dicts = st.dictionaries(st.text(max_size=2), children, max_size=3) | st.dictionaries(
        st.integers(-5, 5), children, max_size=3
    )
    return st.one_of(
        small.map(tuple),
        small,
        dicts,
        dicts.map(OrderedDict),
        dicts.map(lambda d: defaultdict(list, d)),
        st.builds(Point, children, children),
        st.builds(Box, children, st.sampled_from(["a", "b"])),
    )


trees = st.recursive(leaves_st | st.none(), containers, max_leaves=12)


# --- properties over random trees -----------------------------------------------------------------


@given(trees)
def test_flatten_unflatten_round_trip(tree):
    leaves, treedef = tree_flatten(tree)
    assert_identical(leaves, reference_leaves(tree))
    assert treedef.num_leaves == len(leaves)
    rebuilt = tree_unflatten(treedef, leaves)
    assert_same(rebuilt, tree)
    assert tree_structure(rebuilt) == treedef
    assert hash(tree_structure(rebuilt)) == hash(treedef)


@given(trees)
def test_unflatten_places_new_leaves_in_order(tree):
    treedef = tree_structure(tree)
    new = [object() for _ in range(treedef.num_leaves)]
    rebuilt = treedef.unflatten(new)
    assert_identical(tree_leaves(rebuilt), new)
    assert tree_structure(rebuilt) == treedef


@given(trees, trees)
def test_structures_equal_exactly_when_reference_says(a, b):
    same = reference_structure(a) == reference_structure(b)
    assert (tree_structure(a) == tree_structure(b)) is same
    assert (tree_structure(a) != tree_structure(b)) is not same
    if same:
        assert hash(tree_structure(a)) == hash(tree_structure(b))


@given(trees)
def test_structure_ignores_leaf_values(tree):
    zeros = tree_map(lambda x: 0, tree)
    assert tree_structure(zeros) == tree_structure(tree)
    assert tree_leaves(zeros) == [0] * len(reference_leaves(tree))


@given(trees)
def test_tree_map_over_two_trees_pairs_leaves(tree):
    tagged = tree_map(Tag, tree)
    paired = tree_map(Tag, tree, tagged)
    assert tree_structure(paired) == tree_structure(tree)
    pairs = tree_leaves(paired)
    assert len(pairs) == len(reference_leaves(tree))
    for leaf, pair in zip(reference_leaves(tree), pairs):
        x, tag = pair.args
        assert x is leaf
        assert tag.args == (leaf,)


# --- node kinds -----------------------------------------------------------------------------------


def test_dict_children_in_sorted_key_order_and_keys_restored():
    tree = {"b": 1, "c": 2, "a": 3}
    leaves, treedef = tree_flatten(tree)
    assert leaves == [3, 1, 2]
    rebuilt = tree_unflatten(treedef, ["A", "B", "C"])
    assert rebuilt == {"a": "A", "b": "B", "c": "C"}
    assert list(rebuilt) == ["a", "b", "c"]


def test_dict_keys_are_part_of_the_structure():
    assert tree_structure({"a": 1, "b": 2}) != tree_structure({"a": 1, "c": 2})
    assert tree_structure({"a": 1, "b": 2}) == tree_structure({"b": 0, "a": 0})


def test_ordereddict_keeps_insertion_order():
    tree = OrderedDict([("b", 1), ("a", 2)])
    leaves, treedef = tree_flatten(tree)
    assert leaves == [1, 2]
    rebuilt = treedef.unflatten([10, 20])
    assert type(rebuilt) is OrderedDict
    assert list(rebuilt.items()) == [("b", 10), ("a", 20)]
    assert treedef != tree_structure(OrderedDict([("a", 1), ("b", 2)]))
    assert treedef != tree_structure({"b": 1, "a": 2})


def test_defaultdict_keeps_its_factory():
    tree = defaultdict(list, {"b": 1, "a": 2})
    leaves, treedef = tree_flatten(tree)
    assert leaves == [2, 1]
    rebuilt = treedef.unflatten([3, 4])
    assert type(rebuilt) is defaultdict
    assert rebuilt.default_factory is list
    assert dict(rebuilt) == {"a": 3, "b": 4}
    assert treedef != tree_structure(defaultdict(set, {"b": 1, "a": 2}))


def test_unsortable_dict_keys_raise_type_error_suggesting_ordereddict():
    with pytest.raises(TypeError, match="OrderedDict"):
        tree_flatten({1: "x", "a": "y"})
    assert tree_leaves(OrderedDict([(1, "x"), ("a", "y")])) == ["x", "y"]


def test_none_is_a_node_without_leaves():
    assert tree_leaves(None) == []
    assert tree_leaves([None, 1, (None,), {"a": None}]) == [1]
    treedef = tree_structure(None)
    assert treedef.num_leaves == 0
    assert treedef.unflatten([]) is None
    assert treedef != tree_structure(1)
    assert tree_unflatten(tree_structure([None, 1]), [2]) == [None, 2]


def test_namedtuple_rebuilt_as_its_class():
    leaves, treedef = tree_flatten(Point(1, (2, 3)))
    assert leaves == [1, 2, 3]
    rebuilt = treedef.unflatten([4, 5, 6])
    assert type(rebuilt) is Point
    assert rebuilt == Point(4, (5, 6))
    assert repr(treedef) == "PyTreeDef(Point(x=*, y=(*, *)))"


def test_namedtuple_structure_differs_from_tuple_and_other_namedtuples():
    assert tree_structure(Point(1, 2)) != tree_structure((1, 2))
    assert tree_structure(Point(1, 2)) != tree_structure(Other(1, 2))
    assert tree_structure(Point(1, 2)) == tree_structure(Point(3, 4))


def test_tuple_subclass_without_fields_is_a_leaf():
    class Pair(tuple):
        pass

    pair = Pair((1, 2))
    leaves = tree_leaves([pair])
    assert len(leaves) == 1 and leaves[0] is pair


def test_list_and_tuple_are_different_nodes():
    assert tree_structure([1, 2]) != tree_structure((1, 2))
    assert type(tree_structure([1, 2]).unflatten([3, 4])) is list


def test_arrays_and_objects_are_leaves():
    a = np.ones((2, 3))
    o = object()
    leaves = tree_leaves({"a": a, "o": o, "s": "text"})
    assert leaves[0] is a and leaves[1] is o and leaves[2] == "text"


# --- registered types -----------------------------------------------------------------------------


def test_registered_type_round_trips():
    tree = Box([1, Box(2, "inner")], "outer")
    leaves, treedef = tree_flatten(tree)
    assert leaves == [1, 2]
    rebuilt = treedef.unflatten([3, 4])
    assert type(rebuilt) is Box and rebuilt.label == "outer"
    assert rebuilt.content[0] == 3
    assert type(rebuilt.content[1]) is Box and rebuilt.content[1].label == "inner"
    assert rebuilt.content[1].content == 4


def test_registered_type_structure_compares_aux_data():
    assert tree_structure(Box(1, "a")) == tree_structure(Box(2, "a"))
    assert hash(tree_structure(Box(1, "a"))) == hash(tree_structure(Box(2, "a")))
    assert tree_structure(Box(1, "a")) != tree_structure(Box(1, "b"))
    assert tree_structure(Box(1, "a")) != tree_structure(Box((1,), "a"))
    assert repr(tree_structure(Box(1, "a"))) == "PyTreeDef(CustomNode(Box['a'], [*]))"


def test_registering_a_type_twice_raises_value_error():
    class Once:
        pass

    register_pytree_node(Once, lambda x: ((), None), lambda aux, children: Once())
    with pytest.raises(ValueError, match="already registered"):
        register_pytree_node(Once, lambda x: ((), None), lambda aux, children: Once())
    with pytest.raises(ValueError, match="already registered"):
        register_pytree_node(dict, lambda x: ((), None), lambda aux, children: {})


def test_register_rejects_an_instance_or_non_functions():
    with pytest.raises(TypeError, match="class"):
        register_pytree_node(Box(1, "a"), lambda x: ((), None), lambda a, c: None)

    class NotYet:
        pass

    with pytest.raises(TypeError, match="flatten_func"):
        register_pytree_node(NotYet, None, lambda a, c: None)


def test_a_flat_tuple_or_list_shares_the_structure_the_general_path_builds():
    # tree_flatten shares one treedef per length for a tuple or list of known leaf types;
    # is_leaf sends the same tree through the general path, which builds its own
    for tree in [(1.0, np.ones(2)), [np.zeros(3)], (), [], (1.0, (2.0,)), [1.0, None]]:
        leaves, treedef = tree_flatten(tree)
        general_leaves, general = tree_flatten(tree, is_leaf=lambda x: False)
        assert_identical(leaves, general_leaves)
        assert treedef == general and hash(treedef) == hash(general)
        assert_same(tree_unflatten(treedef, leaves), tree)
    assert tree_structure((1.0, 2.0)) is tree_structure((3.0, 4.0))
    assert tree_structure((1.0, 2.0)) != tree_structure([1.0, 2.0])
    # long lists keep no structure behind: a program flattening lists of many lengths
    before = len(tree_util._flat_treedefs)
    for n in range(1000, 1010):
        leaves, treedef = tree_flatten([0.0] * n)
        assert treedef.num_leaves == n and treedef == tree_structure([1.0] * n)
    assert len(tree_util._flat_treedefs) == before


def test_registering_a_type_already_seen_as_a_leaf_makes_it_a_node():
    class Late:
        def __init__(self, value):
            self.value = value

    late = Late(1)
    assert tree_leaves([late]) == [late]  # cached as a leaf type
    register_pytree_node(Late, lambda x: ((x.value,), None), lambda aux, c: Late(c[0]))
    assert tree_leaves([late]) == [1]


def test_flatten_func_that_does_not_return_a_pair_raises_type_error():
    class Bad:
        pass

    register_pytree_node(Bad, lambda x: [1, 2, 3], lambda aux, children: Bad())
    with pytest.raises(TypeError, match="must return a pair"):
        tree_flatten(Bad())


def test_unhashable_aux_data_makes_an_explained_type_error():
    class Listy:
        pass

    register_pytree_node(Listy, lambda x: ((), ["unhashable"]), lambda aux, c: Listy())
    treedef = tree_structure(Listy())
    assert treedef == tree_structure(Listy())
    with pytest.raises(TypeError, match="hashable aux_data"):
        hash(treedef)


# --- tree_map -------------------------------------------------------------------------------------


def test_tree_map_several_trees():
    out = tree_map(
        lambda a, b, c: a + b * c,
        {"x": 1, "y": (2, None)},
        {"x": 10, "y": (20, None)},
        {"x": 100, "y": (1000, None)},
    )
    assert out == {"x": 1001, "y": (20002, None)}


def test_tree_map_rest_may_have_subtrees_where_first_tree_has_leaves():
    out = tree_map(lambda x, y: (x, y), [1, 2, 3], [(4, 5), {"a": 6}, None])
    assert out == [(1, (4, 5)), (2, {"a": 6}), (3, None)]


@pytest.mark.parametrize(
    "first, other, where",
    [
        ([1, 2], [1, 2, 3], "the root"),
        ({"a": [1, 2]}, {"a": (1, 2)}, "tree['a']"),
        ({"a": 1, "b": 2}, {"a": 1, "c": 2}, "the root"),
        ((1, None), (1, 2), "tree[1]"),
        (Point(1, 2), (1, 2), "the root"),
        (Box([1], "a"), Box([1], "b"), "the root"),
        (Point(1, [2]), Point(1, [2, 3]), "tree.y"),
    ],
)
def test_tree_map_mismatch_names_both_structures(first, other, where):
    with pytest.raises(ValueError) as info:
        tree_map(lambda x, y: x, first, other)
    message = str(info.value)
    assert repr(tree_structure(first)) in message
    assert repr(tree_structure(other)) in message
    assert f"at {where}:" in message
    assert "tree 1" in message


def test_tree_map_mismatch_in_third_tree_names_it():
    with pytest.raises(ValueError, match="tree 2 does not match"):
        tree_map(lambda x, y, z: x, [1], [1], [1, 2])


def test_flatten_up_to_takes_subtrees_and_rejects_mismatch():
    treedef = tree_structure([0, {"a": 0}])
    assert treedef.flatten_up_to([(1, 2), {"a": [3]}]) == [(1, 2), [3]]
    with pytest.raises(ValueError, match=r"tree\[1\]"):
        treedef.flatten_up_to([1, {"b": 2}])


# --- is_leaf --------------------------------------------------------------------------------------


def test_is_leaf_stops_flattening_at_matching_subtrees():
    tree = [(1, 2), [3, (4,)]]
    leaves, treedef = tree_flatten(tree, is_leaf=lambda x: isinstance(x, tuple))
    assert leaves == [(1, 2), 3, (4,)]
    assert repr(treedef) == "PyTreeDef([*, [*, *]])"
    assert treedef.unflatten(leaves) == tree


def test_is_leaf_can_make_none_a_leaf():
    def is_none(x):
        return x is None

    assert tree_leaves([None, 1], is_leaf=is_none) == [None, 1]
    assert tree_map(lambda x: 0 if x is None else x, [None, 1], is_leaf=is_none) == [0, 1]


def test_tree_map_with_is_leaf_and_several_trees():
    def is_tuple(x):
        return isinstance(x, tuple)

    out = tree_map(lambda p, q: (sum(p), q), [(1, 2), (3, 4)], [10, 20], is_leaf=is_tuple)
    assert out == [(3, 10), (7, 20)]


def test_is_leaf_must_be_callable():
    with pytest.raises(TypeError, match="is_leaf"):
        tree_flatten([1], is_leaf=True)


# --- PyTreeDef ------------------------------------------------------------------------------------


def test_unflatten_with_wrong_leaf_count_raises_value_error():
    treedef = tree_structure((1, [2]))
    with pytest.raises(ValueError, match="expected 2 leaves, got 3"):
        treedef.unflatten([1, 2, 3])
    with pytest.raises(ValueError, match="expected 2 leaves, got 1"):
        tree_unflatten(treedef, [1])
    with pytest.raises(ValueError, match="expected 1 leaves, got 0"):
        tree_structure(5).unflatten([])


def test_tree_unflatten_with_swapped_arguments_raises_type_error():
    leaves, treedef = tree_flatten([1, 2])
    with pytest.raises(TypeError, match="PyTreeDef first"):
        tree_unflatten(leaves, treedef)


def test_unflatten_accepts_any_iterable():
    assert tree_structure((0, [0, 0])).unflatten(iter("abc")) == ("a", ["b", "c"])
    assert tree_structure(0).unflatten(("x",)) == "x"


def test_treedef_equality_and_hash():
    a = tree_structure((1.0, {"w": np.ones(3), "b": None}))
    b = tree_structure((np.zeros(2), {"w": "x", "b": None}))
    c = tree_structure((1.0, {"w": 1.0, "b": 2.0}))
    assert a == b and hash(a) == hash(b)
    assert a != c
    assert a != "PyTreeDef((*, {'b': None, 'w': *}))"
    cache = {a: "hit"}
    assert cache[b] == "hit"
    assert c not in cache
    assert tree_structure(1) == tree_structure("leaf")
    assert tree_structure(()) != tree_structure([])


def test_treedef_is_immutable():
    treedef = tree_structure([1, 2])
    with pytest.raises(AttributeError):
        treedef.num_leaves = 5
    with pytest.raises(AttributeError):
        treedef.extra = 1
    assert treedef.num_leaves == 2
    assert copy.copy(treedef) is treedef and copy.deepcopy(treedef) is treedef


def test_treedef_is_not_built_directly():
    with pytest.raises(TypeError, match="tree_structure"):
        PyTreeDef()


@pytest.mark.parametrize(
    "tree, expected",
    [
        ((1, {"a": 2, "b": None}), "PyTreeDef((*, {'a': *, 'b': None}))"),
        (3.0, "PyTreeDef(*)"),
        (None, "PyTreeDef(None)"),
        ((1,), "PyTreeDef((*,))"),
        ([[], ()], "PyTreeDef([[], ()])"),
        (OrderedDict(b=1, a=2), "PyTreeDef(OrderedDict({'b': *, 'a': *}))"),
        (defaultdict(list, {1: 2}), "PyTreeDef(defaultdict(list, {1: *}))"),
    ],
)
def test_treedef_repr(tree, expected):
    assert repr(tree_structure(tree)) == expected


# --- the module itself ----------------------------------------------------------------------------


def test_docstring_examples_run():
    result = doctest.testmod(tree_util)
    assert result.attempted > 0
    assert result.failed == 0


def test_imports_only_the_standard_library():
    tree = ast.parse(Path(tree_util.__file__).read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "tree_util must not import other fgrad modules"
            imported.add(node.module.split(".")[0])
    assert imported, "expected at least the collections import"
    assert imported <= sys.stdlib_module_names, imported - sys.stdlib_module_names


# --- the rest of jax.tree_util: each test restates JAX's documented behaviour -----------------


def test_key_paths_and_keystr_as_jax_documents_them():
    """JAX's keystr example: sorted dict keys, [i] for list entries, and simple=True with a
    separator."""
    params = {"foo": {"bar": {"baz": 1, "bat": [2, 3]}}}
    pairs, treedef = tree_util.tree_flatten_with_path(params)
    assert [tree_util.keystr(p) for p, _ in pairs] == [
        "['foo']['bar']['bat'][0]",
        "['foo']['bar']['bat'][1]",
        "['foo']['bar']['baz']",
    ]
    assert [tree_util.keystr(p, simple=True, separator="/") for p, _ in pairs] == [
        "foo/bar/bat/0",
        "foo/bar/bat/1",
        "foo/bar/baz",
    ]
    assert [x for _, x in pairs] == tree_leaves(params) and treedef == tree_structure(params)
    assert tree_util.tree_leaves_with_path(params) == pairs


def test_each_node_kind_has_jax_key_type():
    DictKey, SequenceKey = tree_util.DictKey, tree_util.SequenceKey
    GetAttrKey, FlattenedIndexKey = tree_util.GetAttrKey, tree_util.FlattenedIndexKey
    tree = (
        [1.0],
        OrderedDict(z=2.0),
        defaultdict(list, {3: 3.0}),
        Point(4.0, None),
        Box(5.0, "a"),
    )
    paths = [p for p, _ in tree_util.tree_flatten_with_path(tree)[0]]
    assert paths == [
        (SequenceKey(0), SequenceKey(0)),
        (SequenceKey(1), DictKey("z")),
        (SequenceKey(2), DictKey(3)),
        (SequenceKey(3), GetAttrKey("x")),  # None holds no leaf
        (SequenceKey(4), FlattenedIndexKey(0)),  # registered without keys
    ]
    assert [str(k) for k in paths[4]] == ["[4]", "[<flat index 0>]"]
    assert [repr(k) for k in paths[3]] == ["SequenceKey(idx=3)", "GetAttrKey(name='x')"]
    assert tree_util.tree_flatten_with_path(7.0)[0] == [((), 7.0)]  # a leaf: an empty path
    # is_leaf stops the walk as in tree_flatten
    assert tree_util.tree_leaves_with_path([(1, 2)], is_leaf=lambda x: type(x) is tuple) == [
        ((SequenceKey(0),), (1, 2))
    ]


def test_tree_map_with_path_passes_the_path_first_and_takes_prefixed_trees():
    out = tree_util.tree_map_with_path(
        lambda p, x, y: (tree_util.keystr(p), x + y), {"b": 1, "a": [2]}, {"b": 10, "a": [20]}
    )
    assert out == {"a": [("['a'][0]", 22)], "b": ("['b']", 11)}
    with pytest.raises(ValueError, match="tree 1 does not match"):
        tree_util.tree_map_with_path(lambda p, x, y: x, [1, 2], [1])


def test_tree_reduce_tree_all_and_all_leaves_as_jax_documents_them():
    import operator

    assert tree_util.tree_reduce(operator.add, [1, (2, 3), [4, 5, 6]]) == 21
    assert tree_util.tree_reduce(operator.add, [], 0) == 0
    with pytest.raises(TypeError):  # no leaves and no initializer: functools.reduce's error
        tree_util.tree_reduce(operator.add, [None, ()])
    assert tree_util.tree_all({"a": True, "b": [1, 2.0]}) and tree_util.tree_all([])
    assert not tree_util.tree_all((True, [0]))
    tree = {"a": [1, 2, 3]}
    assert tree_util.all_leaves(tree_leaves(tree))
    assert not tree_util.all_leaves([tree])
    assert not tree_util.all_leaves([None])  # None is a node without children
    assert tree_util.all_leaves([(1, 2)], is_leaf=lambda x: isinstance(x, tuple))
    # JAX's list(iterable) == tree_leaves(list(iterable), is_leaf): is_leaf sees the list too
    # (this gave True), and a None it calls a leaf is one
    assert not tree_util.all_leaves([[1]], is_leaf=lambda x: isinstance(x, list))
    assert tree_util.all_leaves([1, None], is_leaf=lambda x: x is None)


def test_tree_transpose_as_jax_documents_it():
    tree = [(1, 2, 3), (4, 5, 6)]
    outer, inner = tree_structure(["*", "*"]), tree_structure(("*", "*", "*"))
    assert tree_util.tree_transpose(outer, inner, tree) == ([1, 4], [2, 5], [3, 6])
    assert tree_util.tree_transpose(outer, None, tree) == ([1, 4], [2, 5], [3, 6])
    nested = {"w": {"m": 1, "v": 2}, "b": {"m": 3, "v": 4}}
    assert tree_util.tree_transpose(
        tree_structure({"w": 0, "b": 0}), tree_structure({"m": 0, "v": 0}), nested
    ) == {"m": {"w": 1, "b": 3}, "v": {"w": 2, "b": 4}}
    with pytest.raises(TypeError, match=r"inner tree at \[1\]"):
        tree_util.tree_transpose(outer, inner, [(1, 2, 3), (4, 5)])


def test_treedef_children_num_nodes_num_leaves():
    treedef = tree_structure((1.0, [2.0, 3.0], None))
    assert treedef.children() == [
        tree_structure(0),
        tree_structure([0, 0]),
        tree_structure(None),
    ]
    # JAX counts every node, leaves and None included
    assert (treedef.num_nodes, treedef.num_leaves) == (6, 3)
    assert tree_structure(1.0).children() == [] and tree_structure(1.0).num_nodes == 1


def test_register_pytree_node_class_as_jax_documents_it():
    @tree_util.register_pytree_node_class
    class Special:
        def __init__(self, x, y):
            self.x, self.y = x, y

        def tree_flatten(self):
            return ((self.x, self.y), None)

        @classmethod
        def tree_unflatten(cls, aux_data, children):
            return cls(*children)

    doubled = tree_map(lambda v: v * 2, Special(1.0, [2.0]))
    assert type(doubled) is Special and (doubled.x, doubled.y) == (2.0, [4.0])
    with pytest.raises(TypeError, match="tree_flatten"):
        tree_util.register_pytree_node_class(object())


def test_register_dataclass_as_jax_documents_it():
    import dataclasses
    import functools

    @functools.partial(tree_util.register_dataclass, data_fields=["x", "y"], meta_fields=["op"])
    @dataclasses.dataclass
    class MyStruct:
        x: np.ndarray
        y: np.ndarray
        op: str

    m = MyStruct(x=np.ones(3), y=np.arange(3), op="add")
    leaves, treedef = tree_flatten(m)
    assert [v.tolist() for v in leaves] == [[1.0, 1.0, 1.0], [0, 1, 2]]
    assert repr(treedef) == "PyTreeDef(CustomNode(MyStruct[('add',)], [*, *]))"
    assert tree_unflatten(treedef, leaves) == m
    assert [tree_util.keystr(p) for p, _ in tree_util.tree_flatten_with_path(m)[0]] == [".x", ".y"]

    @tree_util.register_dataclass  # fields from the dataclass: static metadata is meta
    @dataclasses.dataclass
    class Inferred:
        w: float
        name: str = dataclasses.field(default="n", metadata={"static": True})

    assert tree_flatten(Inferred(1.0)) == tree_flatten(Inferred(1.0, "n"))
    assert tree_structure(Inferred(1.0, "a")) != tree_structure(Inferred(1.0, "b"))
    assert tree_leaves(Inferred(1.0)) == [1.0]

    @dataclasses.dataclass
    class Missing:
        a: float
        b: float

    with pytest.raises(ValueError, match="each field"):
        tree_util.register_dataclass(Missing, data_fields=["a"], meta_fields=[])
    with pytest.raises(TypeError, match="both"):
        tree_util.register_dataclass(Missing, data_fields=["a", "b"])
    with pytest.raises(TypeError, match="not a dataclass"):
        tree_util.register_dataclass(type("Plain", (), {}))


def test_partial_is_a_pytree_of_its_arguments():
    import operator

    add_one = tree_util.Partial(operator.add, np.float64(1.0))
    assert tree_leaves(add_one) == [1.0] and add_one(2.0) == 3.0
    rebuilt = tree_map(lambda v: v * 10, add_one)
    assert type(rebuilt) is tree_util.Partial and rebuilt(2.0) == 12.0
    kw = tree_util.Partial(lambda x, *, s: x * s, s=3.0)
    assert tree_leaves(kw) == [3.0] and tree_map(lambda v: -v, kw)(2.0) == -6.0
    # a Partial of a Partial keeps only its own arguments as children (functools.partial
    # would merge them), as in JAX
    nested = tree_util.Partial(tree_util.Partial(operator.sub, 10.0), 4.0)
    assert tree_leaves(nested) == [4.0] and nested() == 6.0
