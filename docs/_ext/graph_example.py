"""The function the K transform's page draws: make_graph shows this file's line beside each
primitive, as it shows yours."""

import fgrad.numpy as fnp


def f(x):
    return fnp.sin(x) * x
