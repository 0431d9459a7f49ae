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
