"""Bad input to every public entry point, generated with hypothesis (issue 7).

Each wrong thing a user can pass -- a non-callable, bad `argnums`, integer, bool, string and
object arrays, None, pytrees of the wrong structure, tangents and cotangents of the wrong shape
or dtype, a non-scalar output to grad, a has_aux function that does not return a pair -- must
raise a TypeError or ValueError that names the argument and says what to do, raised at the API
edge (`fgrad/api.py`, `fgrad/custom.py`, `fgrad/tree_util.py`), never from deep inside the core
or the NumPy layer. `expect_user_error` checks all of that; any other exception fails the test.

Cases that expose a bug are kept, marked `xfail(strict=True)` with the bug in the reason.
"""

import os
import re
import traceback

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import fgrad
import fgrad.numpy as fnp
from fgrad import (
    checkpoint,
    custom_jvp,
    custom_vjp,
    grad,
    hessian,
    jacfwd,
    jacrev,
    jvp,
    linearize,
    tap_cotangent,
    tree_util as tu,
    value_and_grad,
    vjp,
)

FEW = settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)

# Where a user error may be raised: the API edge.
_EDGE = tuple(os.path.join("fgrad", name) for name in ("api.py", "custom.py", "tree_util.py"))
# Words that tell the user what to do.
_ACTIONS = re.compile(
    r"\b(pass|use|cast|return|call|list|name|make|give|get|remove|register|drop|define)\b",
    re.I,
)


def expect_user_error(thunk, names, action=True):
    """Run `thunk`; it must raise TypeError/ValueError from the API edge whose message matches
    the regex `names` (the argument it is about) and, with `action`, says what to do in so
    many words (messages that only state what was expected are listed, as a known gap, in
    `test_messages_that_do_not_say_what_to_do`). Returns the message. Where it was raised is
    read from the whole traceback (fgrad hides its own frames from users' tracebacks)."""
    previous = os.environ.get("FGRAD_TRACEBACK_FILTERING")
    os.environ["FGRAD_TRACEBACK_FILTERING"] = "off"
    try:
        thunk()
    except (TypeError, ValueError) as e:
        msg = str(e)
        last = traceback.extract_tb(e.__traceback__)[-1]
        assert last.filename.endswith(_EDGE), (
            f"{type(e).__name__} raised from {last.filename}:{last.lineno}, not at the API "
            f"edge: {msg}"
        )
        assert re.search(names, msg, re.I), f"message does not name {names!r}: {msg}"
        assert not action or _ACTIONS.search(msg), f"message does not say what to do: {msg}"
        return msg
    except Exception as e:  # any other exception type is a failure
        last = traceback.extract_tb(e.__traceback__)[-1]
        pytest.fail(
            f"{type(e).__name__} (not TypeError/ValueError) from {last.filename}:{last.lineno}: {e}"
        )
    finally:
        if previous is None:
            del os.environ["FGRAD_TRACEBACK_FILTERING"]
        else:
            os.environ["FGRAD_TRACEBACK_FILTERING"] = previous
    pytest.fail(f"no error raised (looking for {names!r})")


# --- strategies -----------------------------------------------------------------------------------

shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=4)

non_float_arrays = st.one_of(
    hnp.arrays(st.sampled_from([np.int8, np.int32, np.int64, np.uint16]), shapes),
    hnp.arrays(np.bool_, shapes),
    hnp.arrays(hnp.unicode_string_dtypes(max_len=3), shapes),
    hnp.arrays(
        object, shapes, elements=st.one_of(st.floats(-2, 2), st.text(max_size=2), st.none())
    ),
)
non_float_scalars = st.one_of(
    st.integers(-5, 5),
    st.booleans(),
    st.text(max_size=3),
    st.just(object()),
    st.sampled_from([np.int64(3), np.bool_(True), np.str_("a")]),
)
non_float_leaves = st.one_of(non_float_arrays, non_float_scalars)

non_callables = st.one_of(
    st.none(),
    st.integers(),
    st.floats(allow_nan=False),
    st.text(max_size=3),
    st.lists(st.integers(), max_size=2),
    hnp.arrays(np.float64, shapes),
)

bad_argnums = st.one_of(
    st.floats(allow_nan=False),
    st.text(max_size=3),
    st.booleans(),
    st.none(),
    st.integers(min_value=2, max_value=10**20),  # out of range for 2 arguments
    st.integers(max_value=-3, min_value=-(10**20)),  # negative, out of range
    st.tuples(st.tuples(st.integers(0, 1))),  # nested tuple
    st.tuples(st.integers(0, 1), st.floats(allow_nan=False)),
    st.tuples(st.integers(0, 1), st.integers(2, 50)),
    st.just(()),
    st.just((0, 0)),
)

# A float array shape and a different one.
two_shapes = st.tuples(shapes, shapes).filter(lambda s: s[0] != s[1])


def _f2(x, y):
    return fnp.sum(x * y)


# Entry points as functions of (function, argnums, args): each differentiates `fun`.
_ARGNUM_TRANSFORMS = {
    "grad": lambda f, a, args: grad(f, argnums=a)(*args),
    "value_and_grad": lambda f, a, args: value_and_grad(f, argnums=a)(*args),
    "jacfwd": lambda f, a, args: jacfwd(f, argnums=a)(*args),
    "jacrev": lambda f, a, args: jacrev(f, argnums=a)(*args),
    "hessian": lambda f, a, args: hessian(f, argnums=a)(*args),
}


# --- non-callables --------------------------------------------------------------------------------

_WANT_FUNCTION = {
    "grad": grad,
    "value_and_grad": value_and_grad,
    "jacfwd": jacfwd,
    "jacrev": jacrev,
    "hessian": hessian,
    "custom_vjp": custom_vjp,
    "custom_jvp": custom_jvp,
    "checkpoint": checkpoint,
    "vjp": lambda f: vjp(f, 1.0),
    "jvp": lambda f: jvp(f, (1.0,), (1.0,)),
    "linearize": lambda f: linearize(f, 1.0),
    "tap_cotangent": lambda f: tap_cotangent(1.0, f),
    "defvjp fwd": lambda f: custom_vjp(fnp.sin).defvjp(f, lambda r, ct: (ct,)),
    "defvjp bwd": lambda f: custom_vjp(fnp.sin).defvjp(lambda x: (x, None), f),
    "defjvp": lambda f: custom_jvp(fnp.sin).defjvp(f),
}


@pytest.mark.parametrize("entry", sorted(_WANT_FUNCTION))
@FEW
@given(thing=non_callables)
def test_a_non_callable_is_refused(entry, thing):
    expect_user_error(lambda: _WANT_FUNCTION[entry](thing), r"function")


@given(thing=non_callables)
@FEW
def test_tree_map_refuses_a_non_callable(thing):
    expect_user_error(lambda: tu.tree_map(thing, [1.0, 2.0]), r"\bf\b|function")


# --- argnums --------------------------------------------------------------------------------------


@pytest.mark.parametrize("entry", sorted(_ARGNUM_TRANSFORMS))
@FEW
@given(argnums=bad_argnums)
def test_bad_argnums_are_refused(entry, argnums):
    args = (np.array([1.0, 2.0]), np.array([3.0, 4.0]))
    f = _f2 if entry in ("grad", "value_and_grad", "hessian") else (lambda x, y: x * y)
    expect_user_error(lambda: _ARGNUM_TRANSFORMS[entry](f, argnums, args), r"argnums", action=False)


@pytest.mark.parametrize("entry", sorted(_ARGNUM_TRANSFORMS))
def test_argnums_naming_an_argument_twice_through_a_negative_index(entry):
    args = (np.array([1.0, 2.0]), np.array([3.0, 4.0]))
    f = _f2 if entry in ("grad", "value_and_grad", "hessian") else (lambda x, y: x * y)
    expect_user_error(lambda: _ARGNUM_TRANSFORMS[entry](f, (0, -2), args), r"argnums.*twice")


@pytest.mark.parametrize("entry", ["custom_vjp", "custom_jvp"])
@FEW
@given(
    argnums=st.one_of(
        st.floats(allow_nan=False),
        st.text(max_size=2),
        st.booleans(),
        st.tuples(st.tuples(st.integers(0, 1))),
    )
)
def test_bad_nondiff_argnums_are_refused(entry, argnums):
    make = custom_vjp if entry == "custom_vjp" else custom_jvp
    expect_user_error(lambda: make(_f2, nondiff_argnums=argnums), r"nondiff_argnums", action=False)


@FEW
@given(n=st.one_of(st.integers(2, 10**6), st.integers(-(10**6), -3)))
def test_nondiff_argnums_out_of_range_at_call(n):
    f = custom_vjp(_f2, nondiff_argnums=(n,))
    f.defvjp(lambda x, y: (_f2(x, y), None), lambda *a: (None,))
    expect_user_error(lambda: f(1.0, 2.0), r"nondiff_argnums", action=False)


# --- inputs that cannot be differentiated ---------------------------------------------------------


def _sum_or_zero(x):
    """A function that runs for any input, so that the transform, not the function, must
    refuse what it was given."""
    return fnp.zeros(()) + 1.0


_INPUT_TRANSFORMS = {
    "grad": lambda x: grad(_sum_or_zero)(x),
    "value_and_grad": lambda x: value_and_grad(_sum_or_zero)(x),
    "grad argnums=1": lambda x: grad(lambda a, b: a * 2.0, argnums=1)(1.0, x),
    "vjp": lambda x: vjp(_sum_or_zero, x),
    "jvp": lambda x: jvp(_sum_or_zero, (x,), (x,)),
    "linearize": lambda x: linearize(_sum_or_zero, x),
    "jacfwd": lambda x: jacfwd(_sum_or_zero)(x),
    "jacrev": lambda x: jacrev(_sum_or_zero)(x),
    "hessian": lambda x: hessian(_sum_or_zero)(x),
    "grad of checkpoint": lambda x: grad(checkpoint(_sum_or_zero))(x),
    "grad in a pytree": lambda x: grad(lambda d: d["b"] * 2.0)({"a": x, "b": 1.0}),
}


@pytest.mark.parametrize("entry", sorted(_INPUT_TRANSFORMS))
@FEW
@given(x=non_float_leaves)
def test_non_float_inputs_are_refused_naming_the_argument(entry, x):
    names = r"argument 1" if "argnums=1" in entry else r"argument 0"
    expect_user_error(lambda: _INPUT_TRANSFORMS[entry](x), names)


def test_a_non_float_leaf_deep_in_a_pytree_is_named_by_its_key_path():
    msg = expect_user_error(
        lambda: grad(lambda p: p[0])((1.0, [2.0, np.arange(3)])),
        r"argument 0 at \[1\]\[1\]",
    )
    assert "int64" in msg
    # dict leaves come in sorted key order: "leaf 0" was key 'z' here; the path names it
    msg = expect_user_error(
        lambda: grad(lambda p: p["a"])({"z": np.arange(2), "a": 1.0}), r"argument 0 at \['z'\]"
    )


def test_none_as_the_argument_has_no_leaves_and_a_none_gradient():
    # None is an empty pytree (JAX's semantics): nothing to differentiate, gradient None.
    assert grad(lambda x, y: y * 2.0, argnums=0)(None, 1.0) is None


# --- grad's output --------------------------------------------------------------------------------


@pytest.mark.parametrize("entry", ["grad", "value_and_grad"])
@FEW
@given(shape=shapes.filter(lambda s: int(np.prod(s)) != 1))
def test_a_non_scalar_output_to_grad_is_refused(entry, shape):
    t = grad if entry == "grad" else value_and_grad
    msg = expect_user_error(lambda: t(lambda x: x * 2.0)(np.ones(shape)), r"scalar")
    assert "jacrev" in msg and str(shape) in msg


@FEW
@given(
    out=st.one_of(
        non_float_leaves,
        st.none(),
        st.tuples(st.floats(), st.floats()),
        st.dictionaries(st.text(max_size=2), st.floats(), max_size=2),
    )
)
def test_a_non_float_output_to_grad_is_refused(out):
    expect_user_error(lambda: grad(lambda x: out)(1.0), r"output|return")


_BAD_AUX = st.one_of(
    st.floats(allow_nan=False).map(lambda v: ("scalar", v)),
    st.integers(0, 5).filter(lambda n: n != 2).map(lambda n: ("tuple", n)),
    st.text(max_size=3).map(lambda s: ("string", s)),
    st.none().map(lambda _: ("none", None)),
)


def _aux_fun(kind_value):
    kind, v = kind_value

    def f(x):
        y = fnp.sum(x * x)
        if kind == "scalar":
            return y
        if kind == "tuple":
            return tuple(y for _ in range(v))
        if kind == "string":
            return v
        return None

    return f


_AUX_TRANSFORMS = {
    "grad": lambda f, x: grad(f, has_aux=True)(x),
    "value_and_grad": lambda f, x: value_and_grad(f, has_aux=True)(x),
    "vjp": lambda f, x: vjp(f, x, has_aux=True),
    "jvp": lambda f, x: jvp(f, (x,), (x,), has_aux=True),
}


@pytest.mark.parametrize("entry", sorted(_AUX_TRANSFORMS))
@FEW
@given(kind_value=_BAD_AUX)
def test_has_aux_functions_that_do_not_return_a_pair_are_refused(entry, kind_value):
    f = _aux_fun(kind_value)
    expect_user_error(lambda: _AUX_TRANSFORMS[entry](f, np.ones(2)), r"has_aux.*pair")


def test_has_aux_error_does_not_name_fgrads_internal_box_type():
    msg = expect_user_error(lambda: grad(lambda x: x * 2.0, has_aux=True)(1.0), r"pair")
    assert "Box" not in msg and "an array with shape ()" in msg, msg


# --- tangents and cotangents ----------------------------------------------------------------------


def _wrong_dtype_arrays(shape):
    return st.one_of(
        hnp.arrays(
            st.sampled_from([np.float32, np.float16, np.complex128, np.int64, np.bool_, object]),
            st.just(shape),
        ),
        hnp.arrays(hnp.unicode_string_dtypes(max_len=2), st.just(shape)),
    )


@st.composite
def array_and_wrong_tangent(draw):
    """A float64 array of shape with at least one dimension, and a tangent of the wrong
    shape or the wrong dtype for it."""
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    x = np.linspace(0.5, 1.5, int(np.prod(shape))).reshape(shape)
    other = draw(shapes.filter(lambda s: s != shape))
    t = draw(
        st.one_of(
            st.just(np.ones(other)),
            _wrong_dtype_arrays(shape),
        )
    )
    return x, t


@FEW
@given(xt=array_and_wrong_tangent())
def test_jvp_refuses_a_tangent_of_the_wrong_shape_or_dtype(xt):
    x, t = xt
    expect_user_error(lambda: jvp(fnp.sin, (x,), (t,)), r"\btangent")


@FEW
@given(xt=array_and_wrong_tangent())
def test_vjp_function_refuses_a_cotangent_of_the_wrong_shape_or_dtype(xt):
    x, ct = xt
    _, f_vjp = vjp(fnp.sin, x)
    expect_user_error(lambda: f_vjp(ct), r"cotangent")


@FEW
@given(xt=array_and_wrong_tangent())
def test_linearized_function_refuses_a_tangent_of_the_wrong_shape_or_dtype(xt):
    x, t = xt
    _, f_jvp = linearize(fnp.sin, x)
    msg = expect_user_error(lambda: f_jvp(t), r"\btangent")
    assert "cotangent" not in msg and "vjp function" not in msg, msg


def test_linearized_function_refuses_the_wrong_number_of_tangents():
    _, f_jvp = linearize(lambda x, y: x * y, 1.0, 2.0)
    expect_user_error(lambda: f_jvp(1.0), r"\btangent")


def test_vjp_structure_message_names_the_leaf():
    _, f_vjp = vjp(lambda d: {"a": d * 2.0, "b": d}, 1.0)
    expect_user_error(lambda: f_vjp({"a": 1.0}), r"cotangent.*\['b'\]")


# Scalar float64 values: the tangent/cotangent dtype check is skipped because np.float64 is a
# subclass of Python float (`_check_like`'s `isinstance(e, float)`), so a string, complex,
# bool or object cotangent reaches NumPy or the core.
_SCALAR_BAD = {
    "str": "abc",
    "0-d str array": np.array("a"),
    "complex": 1j,
    "object()": object(),
    "object array of str": np.array("a", dtype=object),
    "bool": True,
    "0-d object array": np.array(1.0, dtype=object),
}
_SCALAR_USES = {
    "vjp": lambda c: vjp(lambda x: x * 2.0, 1.0)[1](c),
    "jvp": lambda c: jvp(lambda x: x * 2.0, (1.0,), (c,)),
    "linearize": lambda c: linearize(lambda x: x * 2.0, 1.0)[1](c),
}


@pytest.mark.parametrize("use", sorted(_SCALAR_USES))
@pytest.mark.parametrize("bad", sorted(_SCALAR_BAD))
def test_a_bad_scalar_tangent_or_cotangent_is_refused(use, bad):
    expect_user_error(lambda: _SCALAR_USES[use](_SCALAR_BAD[bad]), r"tangent")


def test_scalar_tangents_and_cotangents_of_the_right_kind_are_accepted():
    # the other side of the test above: a Python number is weakly typed and takes the value's
    # dtype; a NumPy scalar of another dtype is refused, as an array of another dtype is
    assert vjp(lambda x: x * 2.0, 1.0)[1](1.0) == (2.0,)
    assert vjp(lambda x: x * 2.0, np.float32(1.0))[1](1.0) == (np.float32(2.0),)
    with pytest.raises(ValueError, match=r"the cotangent has dtype float32.*astype\('float64'\)"):
        vjp(lambda x: x * 2.0, 1.0)[1](np.float32(1.0))
    assert jvp(lambda x: x * 2.0, (np.float32(1.0),), (1.0,))[1] == 2.0
    assert linearize(lambda x: x * 2.0, 1.0)[1](3.0) == 6.0


# --- pytree structure -----------------------------------------------------------------------------

leaf_floats = st.floats(0.5, 2.0)
float_trees = st.recursive(
    leaf_floats,
    lambda children: st.one_of(
        st.lists(children, min_size=1, max_size=3),
        st.tuples(children, children),
        st.dictionaries(st.sampled_from("abc"), children, min_size=1, max_size=3),
    ),
    max_leaves=6,
)


@st.composite
def two_structures(draw):
    a = draw(float_trees)
    b = draw(float_trees.filter(lambda b: tu.tree_structure(b) != tu.tree_structure(a)))
    return a, b


def _tree_sum(t):
    leaves = tu.tree_leaves(t)
    out = leaves[0] * 1.0
    for v in leaves[1:]:
        out = out + v
    return out


@FEW
@given(trees=two_structures())
def test_jvp_refuses_tangents_of_another_structure(trees):
    p, t = trees
    expect_user_error(lambda: jvp(_tree_sum, (p,), (t,)), r"\btangents?\b.*structure")


@FEW
@given(trees=two_structures())
def test_vjp_function_refuses_a_cotangent_of_another_structure(trees):
    p, ct = trees
    _, f_vjp = vjp(lambda t: t, p)
    expect_user_error(lambda: f_vjp(ct), r"cotangent.*structure")


@FEW
@given(trees=two_structures())
def test_tree_map_refuses_trees_of_another_structure(trees):
    a, b = trees
    # tree_map allows a subtree where tree 0 has a leaf: only a real mismatch must raise
    try:
        tu.tree_structure(a).flatten_up_to(b)
    except ValueError:
        expect_user_error(lambda: tu.tree_map(lambda u, v: u, a, b), r"tree 1")


@FEW
@given(tree=float_trees, extra=st.integers(1, 3), fewer=st.booleans())
def test_tree_unflatten_refuses_the_wrong_number_of_leaves(tree, extra, fewer):
    leaves, treedef = tu.tree_flatten(tree)
    n = max(0, len(leaves) - extra) if fewer else len(leaves) + extra
    if n == len(leaves):
        n += 1
    expect_user_error(lambda: tu.tree_unflatten(treedef, [1.0] * n), r"leaves")


@FEW
@given(
    thing=st.one_of(
        st.none(), st.integers(), st.lists(st.integers(), max_size=2), st.text(max_size=2)
    )
)
def test_tree_unflatten_refuses_a_non_treedef(thing):
    expect_user_error(lambda: tu.tree_unflatten(thing, [1.0]), r"treedef")


# --- custom rules returning the wrong thing -------------------------------------------------------


@st.composite
def wrong_cotangent_for_ones3(draw):
    """For a value of shape (3,) float64: a cotangent of the wrong shape or structure."""
    return draw(
        st.one_of(
            st.sampled_from([(1,), (2,), (3, 1), (4,), ()]).map(np.ones),
            st.just(("not", "a leaf")),
            st.just({"a": np.ones(3)}),
            st.just([np.ones(3)]),
        )
    )


def _custom_vjp_returning(ct_value):
    f = custom_vjp(lambda x: x * 2.0)
    f.defvjp(lambda x: (x * 2.0, None), lambda res, ct: (ct_value,))
    return f


def _custom_jvp_returning(t_value):
    f = custom_jvp(lambda x: x * 2.0)
    f.defjvp(lambda p, t: (p[0] * 2.0, t_value))
    return f


_RULE_USES = {
    "custom_vjp bwd under grad": lambda c: grad(lambda x: fnp.sum(_custom_vjp_returning(c)(x))),
    "custom_vjp bwd under jvp": lambda c: lambda x: jvp(_custom_vjp_returning(c), (x,), (x,)),
    "custom_jvp rule under jvp": lambda c: lambda x: jvp(_custom_jvp_returning(c), (x,), (x,)),
    "custom_jvp rule under grad": lambda c: grad(lambda x: fnp.sum(_custom_jvp_returning(c)(x))),
    "tap_cotangent under grad": lambda c: grad(lambda x: fnp.sum(tap_cotangent(x, lambda ct: c))),
}


@pytest.mark.parametrize("use", sorted(_RULE_USES))
@FEW
@given(c=wrong_cotangent_for_ones3())
def test_rules_returning_a_cotangent_of_the_wrong_shape_or_structure_are_refused(use, c):
    expect_user_error(
        lambda: _RULE_USES[use](c)(np.ones(3)),
        r"cotangent|tangent|on_cotangent|structure",
        action=False,
    )


@pytest.mark.parametrize("use", sorted(_RULE_USES))
def test_rules_returning_an_object_array_are_refused(use):
    for bad in (np.array(["a", "b", "c"], dtype=object), np.array([None] * 3, dtype=object)):
        expect_user_error(lambda: _RULE_USES[use](bad)(np.ones(3)), r"dtype|object")


@pytest.mark.parametrize("rule", ["fwd", "jvp"])
@FEW
@given(kind_value=_BAD_AUX)
def test_rules_not_returning_a_pair_are_refused(rule, kind_value):
    kind, v = kind_value
    bad = {
        "scalar": lambda x: x,
        "tuple": lambda x: tuple(x for _ in range(v)),
        "string": lambda x: v,
        "none": lambda x: None,
    }[kind]
    if rule == "fwd":
        f = custom_vjp(fnp.sin)
        f.defvjp(lambda x: bad(fnp.sin(x)), lambda r, ct: (ct,))
    else:
        f = custom_jvp(fnp.sin)
        f.defjvp(lambda p, t: bad(fnp.sin(p[0])))
    expect_user_error(lambda: grad(f)(1.0), r"pair")


@pytest.mark.parametrize("n", [0, 2, 3])
def test_bwd_returning_the_wrong_number_of_cotangents_is_refused(n):
    f = custom_vjp(fnp.sin)
    f.defvjp(lambda x: (fnp.sin(x), None), lambda r, ct: (ct,) * n)
    expect_user_error(lambda: grad(f)(1.0), r"bwd.*one cotangent per")


def test_calling_a_custom_function_before_its_rule_is_defined():
    expect_user_error(lambda: custom_vjp(fnp.sin)(1.0), r"defvjp")
    expect_user_error(lambda: custom_jvp(fnp.sin)(1.0), r"defjvp")


@pytest.mark.parametrize("entry", ["jvp", "jacfwd", "jacrev", "checkpoint"])
def test_a_string_output_is_refused(entry):
    f = lambda x: "s"
    use = {
        "jvp": lambda: jvp(f, (1.0,), (1.0,)),
        "jacfwd": lambda: jacfwd(f)(np.ones(2)),
        "jacrev": lambda: jacrev(f)(np.ones(2)),
        "checkpoint": lambda: grad(lambda x: checkpoint(f)(x))(1.0),
    }[entry]
    expect_user_error(use, r"output|return")


def _bad_rule_structure():
    f = custom_vjp(fnp.sin)
    f.defvjp(lambda x: (fnp.sin(x), None), lambda r, ct: ((ct, ct),))
    return grad(f)(1.0)


# Messages that once said only what was expected, and now say what to do as well.
_NO_INSTRUCTION = {
    "custom_vjp(None)": lambda: custom_vjp(None),
    "defvjp(None, bwd)": lambda: custom_vjp(fnp.sin).defvjp(None, lambda r, ct: (ct,)),
    "tap_cotangent(x, None)": lambda: tap_cotangent(1.0, None),
    "grad(f, argnums=0.0)": lambda: grad(fnp.sin, argnums=0.0)(1.0),
    "custom_vjp(f, nondiff_argnums=0.5)": lambda: custom_vjp(fnp.sin, nondiff_argnums=0.5),
    "nondiff_argnums out of range": lambda: _nondiff_out_of_range(),
    "bwd returns a cotangent of the wrong structure": _bad_rule_structure,
}


def _nondiff_out_of_range():
    f = custom_vjp(_f2, nondiff_argnums=(5,))
    f.defvjp(lambda x, y: (_f2(x, y), None), lambda *a: (None,))
    return f(1.0, 2.0)


@pytest.mark.parametrize("case", sorted(_NO_INSTRUCTION))
def test_messages_say_what_to_do(case):
    expect_user_error(_NO_INSTRUCTION[case], r".")


def test_readonly_and_valid_inputs_pass_the_checker():
    """The checker is not vacuous: valid calls go through and give the right numbers."""
    x = np.array([1.0, 2.0])
    x.setflags(write=False)
    np.testing.assert_array_equal(grad(lambda x: fnp.sum(x**2))(x), 2 * x)
    with pytest.raises(pytest.fail.Exception, match="no error raised"):
        expect_user_error(lambda: grad(fnp.sin)(1.0), r"argument")
    with pytest.raises(AssertionError, match="not at the API edge"):
        expect_user_error(lambda: grad(lambda x: fnp.sin("a"))(1.0), r".")


# --- NumPy arrays built from traced values (issue 31) ---------------------------------------------
# NumPy converts a value it stores or wraps through one of its dunders: `out[i] = v` into a
# float or int array calls float(v) or int(v) (complex(v) for a complex array), `out[i:j] = v`,
# `out[[i, j]] = v`, `np.array([v, w])` and `np.asarray(v)` call v.__array__(). The refusal
# names what the user wrote, quoting the line, and says what to write instead.

_AT_SET = r"out = fnp\.at\(out\)\[idx\]\.set\(v\) for out\[idx\] = v.*x = x\.at\[idx\]\.set\(v\)"


def _refusal(f, x=np.ones(3)):
    """The error fgrad raises in grad(f)(x), and the TypeError behind it (NumPy may wrap it)."""
    with pytest.raises((TypeError, ValueError)) as info:
        grad(f)(x)
    error = info.value
    return error, error if isinstance(error, TypeError) else error.__cause__


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.complex128])
def test_assigning_a_traced_element_into_a_numpy_array_says_so(dtype):
    def f(x):
        out = np.zeros(4, dtype)
        out[0] = x[0]
        return fnp.sum(out)

    _, cause = _refusal(f)
    assert isinstance(cause, TypeError)
    message = str(cause)
    assert message.startswith("Assigning a traced value (one with shape () and dtype float64) ")
    assert "into a NumPy array would drop its gradient" in message
    assert "test_bad_input.py line" in message and ": out[0] = x[0])" in message
    assert re.search(_AT_SET + r".*fgrad\.stop_gradient\(v\)", message), message


def test_assigning_a_traced_element_into_a_float_array_shows_fgrads_error_first():
    def f(x):
        out = np.zeros(4)
        out[0] = x[0]
        return fnp.sum(out)

    error, _ = _refusal(f)
    assert isinstance(error, TypeError) and "Assigning a traced value" in str(error)


@pytest.mark.parametrize(
    "assign, shape",
    [
        (lambda out, x: out.__setitem__(slice(1, 3), x[:2]), (2,)),
        (lambda out, x: out.__setitem__([0, 2], x[:2]), (2,)),
        (lambda out, x: out.__setitem__(slice(None), x[0]), ()),
    ],
)
def test_assigning_traced_values_into_numpy_slices_is_refused_first(assign, shape):
    def f(x):
        out = np.zeros(4)
        assign(out, x)
        return fnp.sum(out)

    error, _ = _refusal(f)
    assert isinstance(error, TypeError), error  # fgrad's error is the one raised
    assert str(error).startswith(f"Converting a traced value (one with shape {shape} ")
    assert "test_bad_input.py line" in str(error)
    assert re.search(r"fnp\.stack\(\[a, b\]\) or fnp\.array\(\[a, b\]\).*" + _AT_SET, str(error))


def test_slice_assignment_written_as_such_is_named_an_assignment():
    def f(x):
        out = np.zeros(4)
        out[1:3] = x[:2]
        return fnp.sum(out)

    error, _ = _refusal(f)
    assert isinstance(error, TypeError)
    assert str(error).startswith("Assigning a traced value (one with shape (2,) ")
    assert "NumPy takes NumPy conversion" not in str(error)


@pytest.mark.parametrize(
    "build",
    [
        lambda x: np.array([x[0], x[1]]),
        lambda x: np.array([1.0, x[1]], dtype=np.float64),
        lambda x: np.asarray([x[0], x[1]]),
        lambda x: np.asarray(x),
    ],
)
def test_building_a_numpy_array_from_traced_values_is_refused_naming_fnp_stack(build):
    error, _ = _refusal(lambda x: fnp.sum(build(x)))
    assert isinstance(error, TypeError)
    message = str(error)
    assert message.startswith("Building a NumPy array from a traced value (one with shape ")
    assert "np.asarray(...) of a traced value or of a list holding one" in message
    assert re.search(r"fnp\.stack\(\[a, b\]\) or fnp\.array\(\[a, b\]\)", message)
    # and what the message suggests works
    assert np.allclose(grad(lambda x: fnp.sum(fnp.stack([x[0], x[1]]) ** 2))(np.ones(3)), [2, 2, 0])
    assert np.allclose(
        grad(lambda x: fnp.sum(fnp.at(np.zeros(4))[0].set(x[0])))(np.ones(3)), [1, 0, 0]
    )


def _explicit_float(x):
    out = {}
    out["a"] = float(x[0])
    return x[0] * out["a"]


def _explicit_item(x):
    out = np.zeros(2)
    out[0] = x[0].item()
    return x[0] * out[0]


def _explicit_array(x):
    out = {}
    out["a"] = np.array(x[:2])
    return fnp.sum(x * out["a"][0])


@pytest.mark.parametrize(
    "f, head",
    [
        (_explicit_float, "float() of a traced value"),
        (_explicit_item, "x.item() of a traced value"),
        (_explicit_array, "Building a NumPy array from a traced value"),
    ],
)
def test_a_conversion_written_on_an_assignment_line_is_named_as_written(f, head):
    error, _ = _refusal(f)
    assert isinstance(error, TypeError)
    assert str(error).startswith(head), str(error)


def test_in_place_operators_on_numpy_arrays_say_what_to_write():
    def f(x):
        out = np.zeros(3)
        out += x
        return fnp.sum(out)

    error, _ = _refusal(f)
    assert isinstance(error, TypeError)
    assert re.search(
        r"numpy\.add\(\.\.\., out=\.\.\.\).*a = a \+ v.*a = fnp\.at\(a\)\[idx\]\.add\(v\)",
        str(error),
    )


def test_numpys_vectorize_and_frompyfunc_on_traced_values_name_fnp_vectorize_and_your_line():
    # np.vectorize's message quoted NumPy's own line (args = [asarray(a) for a in args]) as
    # the user's; np.frompyfunc's read "ufunc's ufunc.<lambda> (vectorized)", named a module
    # fgrad.ufunc, and said "cannot differentiate" under vmap
    x = np.array([1.0, 2.0])
    square = np.vectorize(lambda a: a * a)
    with pytest.raises(TypeError, match="fgrad.numpy.vectorize") as e:
        fgrad.grad(lambda x: fnp.sum(square(x)))(x)  # the user's line
    assert "the user's line" in str(e.value) and "asarray(a)" not in str(e.value)
    double = np.frompyfunc(lambda a: 2 * a, 1, 1)
    for traced, arg in ((fgrad.grad(lambda x: fnp.sum(double(x).astype(float))), x),
                        (fgrad.vmap(double), x[None])):  # fmt: skip
        with pytest.raises(TypeError, match=r"np.frompyfunc ufunc .*fgrad.numpy.vectorize") as e:
            traced(arg)
        assert "fgrad.ufunc" not in str(e.value) and "differentiate" not in str(e.value)
    np.testing.assert_array_equal(fgrad.vmap(fnp.vectorize(lambda a: 2 * a))(x[None]), [2 * x])
