"""Gradient-table rows for `fgrad.numpy.fft`: every transform over shapes (4,), (3, 4) and
(2, 3, 4), `n`/`s` smaller and larger than the axis, every norm, axis and axes grids, real inputs
and complex inputs built inside the row (x + 1j y). Most rows return real and imaginary parts
stacked (or |.|^2), so that the float32 run checks complex64 -> float32 round trips; a few
return the complex result itself. See tests/gradtable.py."""

from gradtable import Nondiff, Row

import fgrad.numpy as fnp

F = fnp.fft
ROWS = []
COMPLEX_OUT = "the output is complex64, not float32 (the stacked-parts rows cover float32)"
NORMS = [None, "ortho", "forward"]


def _parts(z):
    """A complex result as a real array: its real and imaginary parts, stacked."""
    return fnp.stack([fnp.real(z), fnp.imag(z)])


def _complex(x, y):
    return x + 1j * y


def _one_d(name, real_only=False):
    f = getattr(F, name)
    rows = [
        Row(f"fft.{name}", lambda x, f=f: _parts(f(x)), (s,)) for s in [(4,), (3, 4), (2, 3, 4)]
    ]
    # n smaller, equal and larger than the axis, every norm, both ends of the axes
    for i, (n, norm) in enumerate([(n, norm) for n in (None, 3, 6) for norm in NORMS]):
        axis = (-1, 0, 1)[i % 3]
        rows.append(
            Row(
                f"fft.{name}",
                lambda x, f=f, n=n, axis=axis, norm=norm: _parts(f(x, n, axis, norm)),
                ((2, 3, 4),),
                variant=f"n={n},axis={axis},norm={norm}",
            )
        )
    rows.append(
        Row(f"fft.{name}", lambda x, f=f: fnp.abs(f(x, 5, 0)) ** 2, ((4, 3),), variant="abs**2,n=5")
    )
    rows.append(
        Row(
            f"fft.{name}",
            lambda x, f=f: f(x, axis=0, norm="ortho"),
            ((3, 2),),
            variant="complex-output",
            float32=COMPLEX_OUT,
        )
    )
    if not real_only:
        rows += [
            Row(
                f"fft.{name}",
                lambda x, y, f=f: _parts(f(_complex(x, y))),
                ((4,), (4,)),
                variant="complex-input",
            ),
            Row(
                f"fft.{name}",
                lambda x, y, f=f: _parts(f(_complex(x, y), 3, 0, "ortho")),
                ((4, 3), (4, 3)),
                variant="complex-input,n=3,axis=0,ortho",
            ),
            Row(
                f"fft.{name}",
                lambda x, y, f=f: fnp.abs(f(_complex(x, y), 7, -1, "forward")) ** 2,
                ((2, 3, 4), (2, 3, 4)),
                variant="complex-input,abs**2,n=7,forward",
            ),
            Row(
                f"fft.{name}",
                lambda x, y, f=f: f(_complex(x, y), 6),
                ((2, 5), (2, 5)),
                variant="complex-input,complex-output",
                float32=COMPLEX_OUT,
            ),
        ]
    return rows


for name in ["fft", "ifft", "irfft", "hfft"]:
    ROWS += _one_d(name)
for name in ["rfft", "ihfft"]:
    ROWS += _one_d(name, real_only=True)

# irfft and hfft: odd and even output lengths from the same input (the Nyquist frequency's
# imaginary part is dropped only for even n), and the default n = 2 (m - 1)
for name in ["irfft", "hfft"]:
    f = getattr(F, name)
    for n in (None, 4, 5):
        ROWS.append(
            Row(
                f"fft.{name}",
                lambda x, y, f=f, n=n: f(_complex(x, y), n) ** 2,
                ((3,), (3,)),
                variant=f"complex-input,squared,n={n}",
            )
        )


def _n_d(name, real_input, grid):
    f = getattr(F, name)
    rows = []
    for shp, s, axes, norm in grid:
        kw = {"s": s, "norm": norm}
        if axes is not None:
            kw["axes"] = axes
        label = f"s={s},axes={axes},norm={norm}"
        rows.append(
            Row(f"fft.{name}", lambda x, f=f, kw=kw: _parts(f(x, **kw)), (shp,), variant=label)
        )
        if not real_input:
            rows.append(
                Row(
                    f"fft.{name}",
                    lambda x, y, f=f, kw=kw: _parts(f(_complex(x, y), **kw)),
                    (shp, shp),
                    variant="complex-input," + label,
                )
            )
    rows.append(Row(f"fft.{name}", lambda x, f=f: fnp.abs(f(x)) ** 2, ((3, 4),), variant="abs**2"))
    rows.append(
        Row(
            f"fft.{name}",
            lambda x, f=f: f(x),
            ((2, 3),),
            variant="complex-output",
            float32=COMPLEX_OUT,
        )
    )
    return rows


GRID_N = [
    ((3, 4), None, None, None),
    ((2, 3, 4), None, None, "ortho"),
    ((2, 3, 4), (2, 5), (0, 2), "forward"),
    ((2, 3, 4), (4,), (1,), None),
    ((2, 3, 4), None, (-1, 0), "ortho"),
    ((2, 3, 4), (3, 3, 6), None, None),
]
GRID_2 = [
    ((3, 4), None, None, None),
    ((2, 3, 4), (2, 6), None, "ortho"),
    ((2, 3, 4), (3, 3), (0, -1), "forward"),
    ((2, 3, 4), None, (2, 1), None),
]
ROWS += _n_d("fftn", False, GRID_N) + _n_d("ifftn", False, GRID_N)
ROWS += _n_d("irfftn", False, GRID_N)
ROWS += _n_d("rfftn", True, GRID_N)
ROWS += _n_d("fft2", False, GRID_2) + _n_d("ifft2", False, GRID_2)
ROWS += _n_d("irfft2", False, GRID_2)
ROWS += _n_d("rfft2", True, GRID_2)

# round trips through the real transforms: the identity, for odd and even lengths
ROWS += [
    Row("fft.irfft", lambda x: F.irfft(F.rfft(x), 5) * x, ((5,),), variant="round-trip,odd"),
    Row(
        "fft.irfftn",
        lambda x: F.irfftn(F.rfftn(x), x.shape) * x,
        ((2, 3, 4),),
        variant="round-trip",
    ),
]

for name in ["fftshift", "ifftshift"]:
    f = getattr(F, name)
    ROWS += [Row(f"fft.{name}", lambda x, f=f: f(x) * x, (s,)) for s in [(4,), (5,), (3, 4)]]
    ROWS += [
        Row(
            f"fft.{name}",
            lambda x, f=f, axes=axes: f(x, axes) ** 2,
            ((2, 3, 5),),
            variant=f"axes={axes}",
        )
        for axes in [None, 0, -1, (0, 2), [1]]
    ]
    ROWS.append(
        Row(
            f"fft.{name}",
            lambda x, y, f=f: _parts(f(F.fft(_complex(x, y)))),
            ((5,), (5,)),
            variant="complex-input",
        )
    )

# squared by fnp.square (np.square, traced or not), so that the value checks of
# tests/test_values.py compare fftfreq itself, not the `**` operator on complex values
ROWS.append(
    Row(
        "fft.fftfreq",
        lambda d: fnp.square(F.fftfreq(5, d)),
        ((),),
        ("positive",),
        variant="traced-d",
        float32="fftfreq is float64, as in NumPy",
    )
)
ROWS.append(
    Row(
        "fft.rfftfreq",
        lambda d: fnp.square(F.rfftfreq(6, d)),
        ((),),
        ("positive",),
        variant="traced-d",
        float32="rfftfreq is float64, as in NumPy",
    )
)

NONDIFF = [
    Nondiff("fft.fftfreq", lambda x: F.fftfreq(5)),
    Nondiff("fft.rfftfreq", lambda x: F.rfftfreq(6, 0.5)),
]
