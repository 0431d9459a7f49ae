"""Gradient-table rows for fgrad.scipy.signal: convolve, correlate and fftconvolve in 1, 2 and
3 dimensions, modes full/valid/same, either input the larger (SciPy swaps them for 'valid'),
both methods, and fftconvolve along chosen axes with broadcasting. See tests/gradtable.py."""

from gradtable import Row

import fgrad.scipy.signal as sig

P = "scipy.signal."
ROWS = []
NONDIFF = []

PAIRS = [
    ((5,), (3,)),
    ((3,), (5,)),
    ((4, 3), (2, 2)),
    ((2, 2), (4, 3)),
    ((3, 2, 2), (2, 2, 1)),
    ((), ()),
]

for name, fn in [
    ("convolve", sig.convolve),
    ("correlate", sig.correlate),
    ("fftconvolve", sig.fftconvolve),
]:
    for mode in ("full", "valid", "same"):
        for pair in PAIRS:
            ROWS.append(
                Row(
                    P + name,
                    lambda x, k, f=fn, m=mode: f(x, k, mode=m),
                    pair,
                    variant=f"mode={mode}",
                )
            )
    if name != "fftconvolve":
        for method in ("direct", "fft"):
            ROWS.append(
                Row(
                    P + name,
                    lambda x, k, f=fn, me=method: f(x, k, "same", me),
                    ((4, 3), (3, 2)),
                    variant=f"method={method}",
                )
            )

for axes, pair in [
    (1, ((4, 3), (1, 2))),
    ((0,), ((4, 3), (2, 3))),
    (-1, ((2, 5), (2, 3))),
    ([0, 2], ((3, 2, 4), (2, 1, 2))),
]:
    for mode in ("full", "valid", "same"):
        ROWS.append(
            Row(
                P + "fftconvolve",
                lambda x, k, a=axes, m=mode: sig.fftconvolve(x, k, m, axes=a),
                pair,
                variant=f"axes={axes},mode={mode}",
            )
        )

# convolve2d and correlate2d: every mode and boundary, either input the larger, a fillvalue
for name, fn in [("convolve2d", sig.convolve2d), ("correlate2d", sig.correlate2d)]:
    for mode in ("full", "same"):
        for boundary in ("fill", "wrap", "symm"):
            for pair in [((4, 3), (2, 2)), ((2, 3), (3, 4))]:
                ROWS.append(
                    Row(
                        P + name,
                        lambda x, k, f=fn, m=mode, b=boundary: f(x, k, m, b),
                        pair,
                        variant=f"mode={mode},boundary={boundary}",
                    )
                )
    for pair in [((4, 3), (2, 2)), ((2, 2), (4, 3)), ((3, 3), (3, 3))]:
        ROWS.append(Row(P + name, lambda x, k, f=fn: f(x, k, "valid"), pair, variant="mode=valid"))
    ROWS.append(
        Row(
            P + name,
            lambda x, k, f=fn: f(x, k, "same", fillvalue=0.5),
            ((4, 3), (3, 2)),
            variant="fillvalue=0.5",
        )
    )
    # complex inputs from real parts: correlate2d conjugates in2 (in1 when 'valid' swaps)
    for mode, pair in [("full", ((3, 3), (2, 2))), ("valid", ((2, 2), (3, 3)))]:
        ROWS.append(
            Row(
                P + name,
                lambda x, y, k, h, f=fn, m=mode: (lambda z: (z.real, z.imag))(
                    f(x + 1j * y, k + 1j * h, m)
                ),
                (pair[0], pair[0], pair[1], pair[1]),
                variant=f"complex,mode={mode}",
            )
        )
