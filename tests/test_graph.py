"""make_graph: what it records of a function and of its derivatives, as text and as a picture."""

import xml.etree.ElementTree as ET

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad import core, grad, jvp, make_graph


def f(x):
    y = fnp.tanh(x)
    return fnp.sum(y * y + y)


def test_a_plain_function_records_its_primitives_in_order_with_their_source_lines():
    g = make_graph(f)(np.ones(3))
    assert [e.primitive for e in g.equations] == ["tanh", "multiply", "add", "sum"]
    assert g.counts() == {"forward": 4}
    assert [v.type for v in g.inputs] == ["f64[3]"]
    assert g.equations[-1].output.type == "f64[]"
    assert g.outputs == [g.equations[-1].output]
    source = g.equations[0].source
    assert source.function == "f" and source.text == "y = fnp.tanh(x)"
    assert "fnp.tanh(x)" in str(g) and "test_graph.py" in str(g)


def test_the_graph_of_grad_shows_the_forward_pass_then_the_bprops_that_ran():
    g = make_graph(grad(f))(np.ones(3))
    counts = g.counts()
    assert counts["forward"] == 4  # the same forward equations as f alone
    assert counts["backward"] >= 4
    roles = [e.role for e in g.equations]
    assert roles == sorted(roles, key=["forward", "backward"].index)  # forward first
    # every backward equation names the forward equation whose bprop applied it
    tanh_eqn = g.equations[0]
    of_tanh = [e for e in g.equations if e.role == "backward" and e.rule_of is tanh_eqn]
    assert of_tanh, str(g)
    # y is used three times: its cotangents are summed, and the sums say so
    y = tanh_eqn.output.name
    sums = [e for e in g.equations if e.sums_cotangent_of == y]
    assert len(sums) == 2 and all(e.primitive == "add_any" for e in sums)
    # tanh's bprop keeps its output (1 - y**2), not its input
    text = str(g)
    assert f"bprop of {y} = tanh" in text and f"keeps {y}" in text


def test_the_gradient_computed_under_make_graph_is_still_right():
    seen = {}

    def probe(x):
        g = grad(f)(x)
        seen["g"] = fnp.asarray(g)
        return g

    x = np.array([0.3, -1.0, 2.0])
    make_graph(probe)(x)
    t = np.tanh(x)
    np.testing.assert_allclose(core.primal(seen["g"]), (2 * t + 1) * (1 - t * t))


def test_higher_order_grows_and_each_order_keeps_the_forward_pass_once():
    h = lambda x: fnp.sin(x) * x
    sizes = []
    for order in range(1, 5):
        d = h
        for _ in range(order):
            d = grad(d)
        g = make_graph(d)(0.7)
        assert g.counts()["forward"] == 2
        assert max(e.level for e in g.equations if e.role == "backward") == order
        sizes.append(len(g))
    assert sizes == sorted(sizes) and len(set(sizes)) == 4, sizes


def test_forward_mode_shows_tangent_rules_next_to_their_primitive():
    x = np.ones(3)
    g = make_graph(lambda x: jvp(f, (x,), (x,)))(x)
    tangent = [e for e in g.equations if e.role == "tangent"]
    assert tangent and g.count("forward") == 4  # f's four; the tangent sums are tangent work
    assert {e.rule_of.primitive for e in tangent if e.rule_of is not None} >= {"tanh", "sum"}


def test_free_variables_and_constants_are_named():
    w = np.arange(3.0)

    def closure(x):
        return fnp.sum(fnp.exp(x * w))

    g = make_graph(closure)(np.ones(3))
    assert "w(free):f64[3]" in str(g)
    # the bprop runs far from the closure, yet names w as the forward pass did
    g = make_graph(grad(closure))(np.ones(3))
    backward = [e for e in g.equations if e.role == "backward"]
    assert any("w(free):f64[3]" in e.text() for e in backward), str(g)
    assert "keeps w(free):f64[3]" in str(g)


def test_the_sum_of_an_inputs_cotangents_names_the_input():
    g = make_graph(grad(lambda x: fnp.sin(x) * x))(1.0)
    assert [e.sums_cotangent_of for e in g.equations if e.sums_cotangent_of] == ["the input a"]
    g2 = make_graph(lambda x: x * 2.0)(1.0)
    assert g2.equations[0].text() == "b:f64[] = multiply a 2.0"


def test_int_arguments_and_static_argnums_are_constants_not_inputs():
    g = make_graph(lambda x, n: x**n, static_argnums=1)(np.ones(2), 3)
    assert len(g.inputs) == 1
    g = make_graph(lambda x, k: x * k)(np.ones(2), np.arange(2))
    assert len(g.inputs) == 1 and "k(local):i64[2]" in str(g)


def test_static_argnums_are_read_as_jit_reads_them():
    # a negative position counts from the end, as jit's, and a NumPy int is a position; they
    # were left out silently (the float argument b an input of the graph, "a:f64[2], b:f64[]")
    f = lambda a, b: a * b
    for static in (1, -1, (-1,), [1], np.int64(1), (np.int64(-1),)):
        g = make_graph(f, static_argnums=static)(np.ones(2), 3.0)
        assert [v.name for v in g.inputs] == ["a"], static
        assert len(fgrad.make_record(f, static_argnums=static)(np.ones(2), 3.0).in_types) == 1
    for static in (2, -3, (0, 5)):  # past the call: refused, as jit refuses it
        with pytest.raises(ValueError, match=r"make_graph: static_argnums names argument"):
            make_graph(f, static_argnums=static)(np.ones(2), 3.0)
    with pytest.raises(TypeError, match=r"make_graph: static_argnums takes an int"):
        make_graph(f, static_argnums="b")


def test_custom_rules_and_checkpoint_are_one_equation_forward():
    @fgrad.custom_vjp
    def clip_grad(x):
        return x

    clip_grad.defvjp(lambda x: (x, None), lambda res, ct: (fnp.clip(ct, -1.0, 1.0),))
    g = make_graph(lambda x: fnp.sum(clip_grad(fnp.sin(x))))(np.ones(2))
    assert g.count("forward") == 3
    g = make_graph(grad(lambda x: fnp.sum(fgrad.checkpoint(fnp.sin)(x) ** 2)))(np.ones(2))
    assert g.count("backward") > 0


def test_the_picture_is_svg_with_a_box_per_value():
    g = make_graph(grad(f))(np.ones(3))
    root = ET.fromstring(g._repr_svg_())
    ns = "{http://www.w3.org/2000/svg}"
    boxes = root.findall(f"{ns}g")
    assert len(boxes) == len(g.inputs) + len(g)
    titles = " ".join(b.find(f"{ns}title").text for b in boxes)
    assert "tanh" in titles and "add_any" in titles


def test_the_picture_reads_forward_then_each_backward_pass_and_fits_its_legend():
    h = lambda x: fnp.sin(x) * x
    g = make_graph(grad(grad(h)))(0.5)
    root = ET.fromstring(g.to_svg())
    assert float(root.get("width")) >= 6 * 95
    ns = "{http://www.w3.org/2000/svg}"
    top = {}
    for box in root.findall(f"{ns}g"):
        name = box.find(f"{ns}text").text.split(" ")[0]
        top[name] = float(box.find(f"{ns}rect").get("y"))
    by_name = {e.output.name: e for e in g.equations}
    forward = max(top[n] for n, e in by_name.items() if e.role == "forward")
    level2 = [top[n] for n, e in by_name.items() if e.role == "backward" and e.level == 2]
    level1 = [top[n] for n, e in by_name.items() if e.role == "backward" and e.level == 1]
    assert forward < min(level2) and max(level2) < min(level1)


def test_a_large_graph_is_summarised_instead_of_drawn():
    def chain(x):
        for _ in range(500):
            x = fnp.sin(x)
        return x

    g = make_graph(chain)(0.1)
    assert len(g) == 500
    assert "too many to draw" in g.to_svg()
    ET.fromstring(g.to_svg())


def test_nothing_is_left_behind_even_when_the_function_raises():
    def bad(x):
        fnp.sin(x)
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        make_graph(bad)(1.0)
    assert core._state.stack == []
    assert grad(fnp.sin)(0.0) == 1.0


def test_make_graph_wants_a_function():
    with pytest.raises(TypeError, match="make_graph expects a function.*make_graph\\(f\\)"):
        make_graph(3.0)


def test_make_graph_example_runs_as_pasted_after_its_own_imports():
    """help(fgrad.make_graph)'s example called make_graph unqualified after `import fgrad`:
    pasted, it raised NameError (doctest, run in fgrad.graph's globals, did not see it)."""
    import doctest

    finder = doctest.DocTestFinder(recurse=False)
    (test,) = finder.find(fgrad.make_graph, "make_graph", globs={})
    result = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS).run(test, out=lambda s: None)
    assert result.failed == 0 and result.attempted > 0


# --- what the probe of the docs and pictures found (probe FB) ----------------------------------

SVG = "{http://www.w3.org/2000/svg}"


def _boxes(svg):
    """Each box of a picture: (its bold label, its second line)."""
    return [
        tuple(t.text for t in box.findall(f"{SVG}text"))
        for box in ET.fromstring(svg).findall(f"{SVG}g")
    ]


def test_a_graph_without_inputs_is_drawn():
    """An int argument is a constant, so these graphs have no inputs: drawing them raised
    "max() arg is an empty sequence" (to_svg, and a notebook's display)."""
    cases = [
        (lambda n: n * 2, (3,)),
        (lambda: fnp.ones(2), ()),
        (lambda n: fnp.sum(n * 2), (np.arange(3),)),
        (lambda: None, ()),
    ]
    for fun, args in cases:
        g = make_graph(fun)(*args)
        assert g.inputs == [] and len(g) == 0
        svg = g.to_svg()
        assert svg == g._repr_svg_()
        consts = [o for o in g.outputs if not isinstance(o, fgrad.graph.Var)]
        assert [label for label, _ in _boxes(svg)] == [repr(c) for c in consts]
    assert "nothing to draw" in make_graph(lambda: None)().to_svg()


def test_constant_outputs_are_drawn_and_marked_as_outputs():
    g = make_graph(lambda x: 3.0)(1.0)
    assert _boxes(g.to_svg()) == [("a: input", "f64[]"), ("3.0", "constant · output")]
    # a gradient with a leaf that does not depend on the input: the printout lists it, and
    # the picture has a box for it, as for each value the printout lists
    fun = grad(lambda p: p["w"] * p["b"][0])
    g = make_graph(fun)({"w": 1.0, "b": np.ones(2), "v": np.ones(2)})
    const = [o for o in g.outputs if isinstance(o, fgrad.graph.Const)]
    boxes = _boxes(g.to_svg())
    assert len(const) == 1 and len(boxes) == len(g.inputs) + len(g) + 1
    assert (repr(const[0]), "constant · output ['v']") in boxes


def test_an_equation_with_several_outputs_is_one_box_fed_by_each():
    """Drawing a graph that used the second output of svd (or slogdet's log|det|) raised a
    KeyError: only an equation's first output had a place in the picture."""
    x = np.eye(2) + 0.1
    for fun in (lambda x: fnp.sum(fnp.linalg.svd(x)[1]), grad(lambda x: fnp.linalg.slogdet(x)[1])):
        g = make_graph(fun)(x)
        boxes = _boxes(g.to_svg())
        assert len(boxes) == len(g.inputs) + len(g)
    g = make_graph(lambda x: fnp.linalg.svd(x))(x)
    label, subtitle = _boxes(g.to_svg())[1]
    assert label == "b, c, d = svd" and subtitle.startswith("f64[2,2…")  # the types, clipped
    assert " · output .U .S" in subtitle  # so that what the box is stays in sight


def test_the_legend_says_what_a_dashed_edge_is_when_there_is_one():
    h = lambda x: fnp.sin(x) * x
    for fun, dashed in ((h, False), (grad(h), True), (lambda x: jvp(h, (x,), (1.0,)), True)):
        root = ET.fromstring(make_graph(fun)(0.5).to_svg())
        edges = [p for p in root.iter(f"{SVG}path") if p.get("marker-end")]
        legend = [t.text for t in root.findall(f"{SVG}text")]
        assert any(p.get("stroke-dasharray") for p in edges) == dashed
        assert ("reads a forward value" in legend) == dashed
        right = max(float(r.get("x")) for r in root.findall(f"{SVG}rect"))
        assert float(root.get("width")) > right


def test_a_jitted_function_is_named_as_jitted():
    """make_graph(jit(f)) was titled make_graph(f), as if f were not jitted."""
    h = lambda x: fnp.sin(x) * x
    assert str(make_graph(fgrad.jit(h))(1.0)).startswith("make_graph(jit(<lambda>)): ")
    g = make_graph(fgrad.jit(grad(h)))
    assert g.__name__ == "make_graph(jit(grad(<lambda>)))"
    assert str(g(1.0)).startswith("make_graph(jit(grad(<lambda>))): ")
    assert str(make_graph(grad(h))(1.0)).startswith("make_graph(grad(<lambda>)): ")


@fgrad.custom_vjp
def _sine(x):
    return fnp.sin(x)


_sine.defvjp(lambda x: (fnp.sin(x), fnp.cos(x)), lambda c, ct: (ct * c,))


@fgrad.primitive
def _logsumexp(x):
    m = fnp.max(x)
    ans = m + fnp.log(fnp.sum(fnp.exp(x - m)))
    return ans, lambda ct: (ct * fnp.exp(x - ans),)


def test_a_custom_rule_under_grad_is_named():
    """Under grad, a custom_vjp runs your fwd instead of applying its primitive, so no
    equation names it: its bprop's block had a bare heading, the values fwd computed no note,
    and the sum of the cotangents of its output was said to be of "an input"."""

    def f(x):
        y = _sine(x)
        return y * y

    g = make_graph(grad(f))(0.5)
    text = str(g)
    assert "bprop of custom_vjp_call (f, test_graph.py line" in text, text
    fwd = [e for e in g.equations if e.role == "residual"]
    assert [e.primitive for e in fwd] == ["sin", "cos"]
    assert all(e.rule_call is not None and e.rule_call.primitive == "custom_vjp_call" for e in fwd)
    assert "# in the rule of custom_vjp_call (f, test_graph.py line" in text
    (s,) = [e for e in g.equations if e.sums_cotangent_of is not None]
    assert s.sums_cotangent_of.startswith("output 0 of custom_vjp_call (f, test_graph.py line")
    np.testing.assert_allclose(grad(f)(0.5), 2 * np.sin(0.5) * np.cos(0.5))
    # a function made a primitive, whose rule runs it: its bprop is named too
    text = str(make_graph(grad(_logsumexp))(np.ones(3)))
    assert "bprop of _logsumexp (" in text and "backward pass of reverse level 1:\n" not in text


def test_a_primitive_whose_rule_applies_it_is_shown_as_without_grad():
    """stack's reverse rule computes its value by applying stack: under grad the application
    was counted as a residual, without your line, and its bprop's block had a bare heading."""
    fun = lambda x: fnp.sum(fnp.stack([x, x * 2.0]) ** 2)
    plain = make_graph(fun)(np.ones(2))
    g = make_graph(grad(fun))(np.ones(2))
    (stack,) = [e for e in g.equations if e.primitive == "stack"]
    (stack0,) = [e for e in plain.equations if e.primitive == "stack"]
    assert stack.role == "forward" and str(stack.source) == str(stack0.source)
    assert g.count("forward") == len(plain)
    assert f"bprop of {stack.output.name} = stack (" in str(g)


def test_the_inner_input_of_a_second_derivative_is_named():
    """grad(grad(f))'s inner level has as input a box of the outer one, holding the graph's
    input: the sum of its cotangents said "an input"."""
    g = make_graph(grad(grad(lambda x: fnp.sin(x) * x)))(0.5)
    sums = [e.sums_cotangent_of for e in g.equations if e.sums_cotangent_of]
    assert sums and set(sums) == {"the input a"}, sums


def test_the_leaves_of_pytrees_are_named_by_their_key_paths():
    g = make_graph(grad(lambda p: p["w"] * p["b"] + fnp.sum(p["v"])))(
        {"w": 2.0, "b": 3.0, "v": np.ones(2)}
    )
    lines = str(g).splitlines()
    assert lines[1] == "inputs: a:f64[] ['b'], b:f64[2] ['v'], c:f64[] ['w']"
    names = [o.name if isinstance(o, fgrad.graph.Var) else repr(o) for o in g.outputs]
    assert lines[-1] == f"outputs: {names[0]} ['b'], {names[1]} ['v'], {names[2]} ['w']"
    labels = [label for label, _ in _boxes(g.to_svg())]
    assert labels[:3] == ["a: input ['b']", "b: input ['v']", "c: input ['w']"]
    # with several arguments, the argument too; a bare array is not labelled
    g = make_graph(lambda x, p: x * p[0] * p[1])(1.0, (2.0, 3.0))
    assert str(g).splitlines()[1] == "inputs: a:f64[], b:f64[] args[1][0], c:f64[] args[1][1]"
