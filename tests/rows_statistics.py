"""Gradient-table rows for fgrad.numpy's statistics: var, std, ptp, average, cumsum, cumprod,
median, percentile, quantile, the nan-functions, NumPy's keywords (where=, mean=, initial=),
histogram's weights, and all/any/count_nonzero/iscomplex/isreal (no derivative). See
tests/gradtable.py."""

import numpy as np
from gradtable import Nondiff, Row, draw

import fgrad.numpy as fnp

ROWS = []

# Names whose rows cannot run on Dask arrays (tests/test_dask_table.py), and why: the order
# statistics are gathered through the sorting permutation (np.argsort), which Dask does not
# implement.
_SORTS = "the rule gathers the order statistics through np.argsort, which Dask does not implement"
DASK_CANNOT = {
    name: _SORTS
    for name in (
        "median",
        "nanmedian",
        "percentile",
        "nanpercentile",
        "quantile",
        "nanquantile",
    )
}
_HISTOGRAM_READS = (
    "NumPy's counts are read from the values of the sample, bins and range (histogram2d and "
    "histogramdd count lazily, but their sums round otherwise than histogram's)"
)
DASK_CANNOT.update(
    {
        row_id: _HISTOGRAM_READS
        for row_id in (
            "histogram[edges]-5",
            "histogram[traced range,edges]-scalar",
            "histogram[traced range,density]-7-scalar",
            "histogram[traced bins]-4-7",
        )
    }
)

AXES = [None, 0, -1, (0, 1)]


def _axis_grid(name, fn, domain="real", extra=None, **kw):
    """fn(x, axis=..., keepdims=...) over (3,), () and every axis form of a (3, 2) input."""
    extra = extra or {}
    tag = ",".join(f"{k}={v}" for k, v in extra.items())
    rows = [Row(name, lambda x: fn(x, **extra), ((3,),), (domain,), variant=tag, **kw)]
    if "ddof" not in extra:  # one element with ddof=1 is a 0/0
        rows.append(Row(name, lambda x: fn(x, **extra), ((),), (domain,), variant=tag, **kw))
    for axis in AXES:
        for keepdims in (False, True):
            rows.append(
                Row(
                    name,
                    lambda x, axis=axis, k=keepdims: fn(x, axis=axis, keepdims=k, **extra),
                    ((3, 2),),
                    (domain,),
                    variant=f"axis={axis},keepdims={keepdims}" + ("," + tag if tag else ""),
                    **kw,
                )
            )
    return rows


def _with_nans(shape, domain="real", where=((0,),)):
    """make= for an input of `shape` with NaNs at the given positions."""

    def make(rng):
        x = np.array(draw(domain, shape, rng), dtype=float)
        for idx in where:
            x[idx] = np.nan
        return (x,)

    return make


# --- var, std, ptp --------------------------------------------------------------------------------

for name, fn in [("var", fnp.var), ("std", fnp.std)]:
    ROWS += _axis_grid(name, fn)
    ROWS += _axis_grid(name, fn, extra={"ddof": 1})
    ROWS += [
        Row(
            name,
            lambda x, fn=fn: fn(x, axis=(1, 2), correction=1),
            ((2, 3, 2),),
            variant="correction=1,axis=(1,2)",
        )
    ]
ROWS += _axis_grid("ptp", fnp.ptp, "apart_a")

# --- average --------------------------------------------------------------------------------------

ROWS += _axis_grid("average", fnp.average)
ROWS += [
    Row(
        "average",
        lambda x, w: fnp.average(x, weights=w),
        ((3,), (3,)),
        ("real", "positive"),
        variant="weights",
    ),
    Row(
        "average",
        lambda x, w: fnp.average(x, axis=0, weights=w),
        ((3, 2), (3,)),
        ("real", "positive"),
        variant="weights-1d,axis=0",
    ),
    Row(
        "average",
        lambda x, w: fnp.average(x, axis=-1, weights=w, keepdims=True),
        ((3, 2), (2,)),
        ("real", "positive"),
        variant="weights-1d,axis=-1,keepdims",
    ),
    Row(
        "average",
        lambda x, w: fnp.average(x, axis=(0, 1), weights=w),
        ((3, 2), (3, 2)),
        ("real", "positive"),
        variant="weights,axis=(0,1)",
    ),
    Row(
        "average",
        lambda x, w: fnp.average(x, axis=1, weights=w, returned=True),
        ((3, 2), (3, 2)),
        ("real", "positive"),
        variant="weights,returned",
    ),
    Row(
        "average",
        lambda x: fnp.average(x, axis=0, weights=np.array([1.0, 2.0, 3.0])),
        ((3, 2),),
        variant="constant-weights",
        promotes=True,
    ),
]

# --- cumsum, cumprod (exact zeros for cumprod) ----------------------------------------------------

for name, fn in [("cumsum", fnp.cumsum), ("cumprod", fnp.cumprod)]:
    ROWS += [Row(name, fn, (s,)) for s in [(), (3,), (3, 2)]]
    ROWS += [
        Row(name, lambda x, fn=fn, a=a: fn(x, axis=a), ((3, 2),), variant=f"axis={a}")
        for a in (0, 1, -1)
    ]
    ROWS += [
        Row(name, lambda x, fn=fn: fn(x, axis=1), ((2, 5, 2),), variant="axis=1,n=5"),
        Row(
            name,
            lambda x, fn=fn: fn(x, dtype=np.float64),
            ((3,),),
            variant="dtype",
            float32="dtype=float64 asks for a float64 result",
        ),
    ]
    ROWS += [Row(name, lambda x, fn=fn: x.sum() * fn(x)[-1], ((4,),), variant="product-rule")]
ROWS += [
    Row(
        "cumprod",
        fnp.cumprod,
        make=lambda rng: (np.array([1.3, 0.0, -0.7, 0.0, 2.0]),),
        variant="two-zeros",
    ),
    Row(
        "cumprod",
        lambda x: fnp.cumprod(x, axis=0),
        make=lambda rng: (np.array([[0.0, 1.5], [0.8, 0.0], [-1.2, 0.9]]),),
        variant="zeros,axis=0",
    ),
]

# --- median, percentile, quantile -----------------------------------------------------------------

ROWS += _axis_grid("median", fnp.median, "apart_a")
ROWS += [
    Row("median", fnp.median, ((4,),), ("apart_a",), variant="even"),
    Row(
        "median",
        lambda x: fnp.median(x, axis=(0, 2)),
        ((2, 3, 2),),
        ("apart_a",),
        variant="axis=(0,2)",
    ),
]
for name, fn, qs in [
    ("quantile", fnp.quantile, (0.3, [0.1, 0.5, 1.0])),
    ("percentile", fnp.percentile, (30.0, [10.0, 50.0, 100.0])),
]:
    # a list q is a float64 array, so float32 data gives float64 quantiles (as in NumPy)
    ROWS += _axis_grid(
        name, lambda x, q=qs[1], fn=fn, **kw: fn(x, q, **kw), "apart_a", promotes=True
    )
    ROWS += [
        Row(name, lambda x, q=qs[0], fn=fn: fn(x, q), (s,), ("apart_a",), variant=f"q={qs[0]}")
        for s in [(), (3,), (3, 2)]
    ]
    for method in [
        "lower",
        "higher",
        "nearest",
        "midpoint",
        "hazen",
        "weibull",
        "median_unbiased",
        "normal_unbiased",
        "interpolated_inverted_cdf",
        "inverted_cdf",
        "averaged_inverted_cdf",
        "closest_observation",
    ]:
        ROWS.append(
            Row(
                name,
                lambda x, fn=fn, q=qs[1], m=method: fn(x, q, axis=0, method=m),
                ((5, 2),),
                ("apart_a",),
                variant=f"method={method}",
                promotes=method
                not in ("lower", "higher", "nearest", "inverted_cdf", "closest_observation"),
            )
        )
    scale = 100.0 if name == "percentile" else 1.0
    # q is differentiable too: d quantile/dq = (n - 1) (x_(k+1) - x_(k)) for 'linear'
    ROWS += [
        Row(
            name,
            lambda x, q, fn=fn, s=scale: fn(x, q * s),
            ((4,), ()),
            ("apart_a", "probability"),
            variant="traced-q",
        ),
        Row(
            name,
            lambda x, q, fn=fn, s=scale: fn(x, q * s, axis=1),
            ((3, 4), (2,)),
            ("apart_a", "probability"),
            variant="traced-q-array,axis=1",
        ),
        Row(
            name,
            lambda x, q, fn=fn, s=scale: fn(x, q * s, axis=0, method="hazen"),
            ((5, 2), ()),
            ("apart_a", "probability"),
            variant="traced-q,hazen",
        ),
    ]

# --- the nan-functions: NaNs ignored, never a NaN gradient ----------------------------------------

NAN_AT = ((0, 1), (2, 0))  # positions of NaNs in a (3, 2) input (not a whole row or column)
for name in ["nansum", "nanmean", "nanmax", "nanmin", "nanprod", "nanvar", "nanstd", "nanmedian"]:
    fn = getattr(fnp, name)
    domain = "apart_a" if name in ("nanmax", "nanmin", "nanmedian") else "real"
    ROWS += [
        Row(name, fn, ((3,),), (domain,), variant="no-nan"),
        Row(name, fn, make=_with_nans((4,), domain), variant="nan"),
    ]
    for axis in [None, 0, -1, (0, 1)]:
        for keepdims in (False, True):
            ROWS.append(
                Row(
                    name,
                    lambda x, fn=fn, a=axis, k=keepdims: fn(x, axis=a, keepdims=k),
                    make=_with_nans((3, 2), domain, NAN_AT),
                    variant=f"nan,axis={axis},keepdims={keepdims}",
                )
            )
ROWS += [
    Row(
        "nanvar",
        lambda x: fnp.nanvar(x, axis=0, ddof=1),
        make=_with_nans((4, 2), "real", NAN_AT),
        variant="ddof=1",
    ),
    Row(
        "nanstd",
        lambda x: fnp.nanstd(x, axis=1, ddof=1),
        make=_with_nans((3, 3), "real", NAN_AT),
        variant="ddof=1",
    ),
    # a slice that is all NaN gives NaN; check the others through a mask-free sum
    Row(
        "nanmean",
        lambda x: fnp.nansum(fnp.nanmean(x, axis=1)),
        make=_with_nans((3, 2), "real", ((1,),)),
        variant="all-nan-row",
    ),
    Row(
        "nanmax",
        lambda x: fnp.nansum(fnp.nanmax(x, axis=1)),
        make=_with_nans((3, 2), "apart_a", ((1,),)),
        variant="all-nan-row",
    ),
    Row(
        "nanvar",
        lambda x: fnp.nansum(fnp.nanvar(x, axis=1)),
        make=_with_nans((3, 2), "real", ((1,),)),
        variant="all-nan-row",
    ),
    Row(
        "nanmedian",
        lambda x: fnp.nansum(fnp.nanmedian(x, axis=1)),
        make=_with_nans((3, 3), "apart_a", ((1,), (0, 2))),
        variant="all-nan-row",
    ),
]
for name, fn, q in [
    ("nanquantile", fnp.nanquantile, 0.3),
    ("nanpercentile", fnp.nanpercentile, 30.0),
]:
    ROWS += [
        Row(name, lambda x, fn=fn, q=q: fn(x, q), ((3,),), ("apart_a",), variant="no-nan"),
        Row(name, lambda x, fn=fn, q=q: fn(x, q), make=_with_nans((5,), "apart_a"), variant="nan"),
    ]
    for axis in [None, 0, -1, (0, 1)]:
        ROWS.append(
            Row(
                name,
                lambda x, fn=fn, a=axis, q=q: fn(x, [q, q * 2], axis=a, keepdims=True),
                make=_with_nans((3, 3), "apart_a", NAN_AT),
                variant=f"nan,axis={axis}",
                promotes=True,
            )
        )
    ROWS.append(
        Row(
            name,
            lambda x, p, fn=fn, s=q / 0.3: fn(x, p * s, axis=0),
            make=lambda rng: (_with_nans((5, 2), "apart_a", NAN_AT)(rng)[0], np.array(0.45)),
            variant="traced-q",
        )
    )
    ROWS.append(
        Row(
            name,
            lambda x, fn=fn, q=q: fn(x, q, axis=1, method="midpoint"),
            make=_with_nans((3, 4), "apart_a", NAN_AT),
            variant="method=midpoint",
        )
    )
for name, fn in [("nancumsum", fnp.nancumsum), ("nancumprod", fnp.nancumprod)]:
    ROWS += [
        Row(name, fn, ((3,),), variant="no-nan"),
        Row(name, fn, make=_with_nans((3, 2), "real", NAN_AT), variant="nan"),
        Row(
            name,
            lambda x, fn=fn: fn(x, axis=0),
            make=_with_nans((3, 2), "real", NAN_AT),
            variant="nan,axis=0",
        ),
        Row(
            name,
            lambda x, fn=fn: fn(x, axis=-1),
            make=_with_nans((3, 2), "real", NAN_AT),
            variant="nan,axis=-1",
        ),
    ]

# NumPy's keywords: a `where` mask, a given `mean`, and the nan-reductions' initial/where
_MASK = np.array([[True, False], [True, True], [False, True], [True, True]])
for name, fn in [("var", fnp.var), ("std", fnp.std)]:
    ROWS += [
        Row(name, lambda x, fn=fn: fn(x, where=_MASK), ((4, 2),), variant="where"),
        Row(
            name,
            lambda x, fn=fn: fn(x, axis=0, ddof=1, where=_MASK),
            ((4, 2),),
            variant="where,axis=0,ddof=1",
        ),
        Row(
            name, lambda x, m, fn=fn: fn(x, axis=0, mean=m), ((4, 2), (1, 2)), variant="traced mean"
        ),
        Row(
            name,
            lambda x, fn=fn: fn(x, axis=1, keepdims=True, dtype=np.float64),
            ((4, 2),),
            variant="dtype",
            promotes=True,
        ),
    ]
ROWS += [
    Row("var", lambda x, y: fnp.var(x + 1j * y, axis=0), ((4, 2), (4, 2)), variant="complex"),
    Row(
        "nanmean",
        lambda x: fnp.nanmean(x, axis=0, where=_MASK[:3]),
        make=_with_nans((3, 2), "real", ((0,), (0,))),
        variant="nan,where",
    ),
    Row(
        "nanvar",
        lambda x: fnp.nanvar(x, axis=0, where=_MASK[1:]),
        make=_with_nans((3, 2), "real", ((0,), (0,))),
        variant="nan,where",
    ),
    Row(
        "nanstd",
        lambda x: fnp.nanstd(x, axis=1, mean=fnp.nanmean(x, axis=1, keepdims=True)),
        make=_with_nans((3, 3), "real", NAN_AT),
        variant="nan,mean",
    ),
    Row(
        "nansum",
        lambda x: fnp.nansum(x, axis=0, initial=1.5, where=_MASK[:3]),
        make=_with_nans((3, 2), "real", NAN_AT),
        variant="nan,initial,where",
    ),
    Row(
        "nanprod",
        lambda x: fnp.nanprod(x, axis=1, initial=2.0, where=_MASK[:3]),
        make=_with_nans((3, 2), "real", NAN_AT),
        variant="nan,initial,where",
    ),
    Row(
        "nanmax",
        lambda x: fnp.nanmax(x, axis=0, initial=-0.55, where=_MASK[:3]),
        make=_with_nans((3, 2), "apart_a", NAN_AT),
        variant="nan,initial,where",
    ),
    Row(
        "nanmin",
        lambda x: fnp.nanmin(x, initial=0.45),
        make=_with_nans((3, 2), "apart_a", NAN_AT),
        variant="nan,initial",
    ),
]

# --- histogram: differentiable in its weights -----------------------------------------------------

_SAMPLES = np.array([-1.3, 0.2, 0.25, 1.7, 0.9, -0.4, 3.0])
ROWS += [
    Row(
        "histogram",
        lambda w: fnp.histogram(_SAMPLES, bins=3, weights=w)[0],
        ((7,),),
        variant="weights",
    ),
    Row(
        "histogram",
        lambda w: fnp.histogram(_SAMPLES, bins=[-1.0, 0.0, 0.5, 2.0], weights=w)[0],
        ((7,),),
        variant="weights,edges",
    ),
    Row(
        "histogram",
        lambda w: fnp.histogram(_SAMPLES, 4, (-1.0, 1.0), True, w)[0],
        ((7,),),
        ("positive",),
        variant="weights,range,density",
        promotes=True,
    ),  # as NumPy
    Row(
        "histogram",
        lambda w: np.histogram(_SAMPLES.reshape(7, 1), bins=2, weights=w)[0],
        ((7, 1),),
        variant="numpy's,2-d",
    ),
    # the edges are differentiable, in the sample (its min and max), in given edges and in a
    # traced range (they were constants: a gradient of 0); the ranges and edges drawn here
    # keep every edge 0.03 or more from every sample, so no step moves a point to another bin
    Row("histogram", lambda a: fnp.histogram(a, bins=4)[1], ((5,),), ("apart_a",), variant="edges"),
    Row(
        "histogram",
        lambda lo: fnp.histogram(_SAMPLES, 3, (lo, 4.0))[1],
        make=lambda rng: (np.array(rng.uniform(-2.0, -1.95)),),
        variant="traced range,edges",
        promotes=True,  # (the sample is float64)
    ),
    Row(
        "histogram",
        lambda w, lo: fnp.histogram(_SAMPLES, 3, (lo, 4.0), True, w)[0],
        make=lambda rng: (rng.uniform(0.5, 2.0, 7), np.array(rng.uniform(-2.0, -1.95))),
        variant="traced range,density",
        promotes=True,
    ),
    Row(
        "histogram",
        lambda e, w: fnp.histogram(_SAMPLES, bins=e, weights=w),
        make=lambda rng: (
            np.array([-1.0, 0.0, 0.5, 2.0]) + rng.uniform(-0.02, 0.02, 4),
            rng.uniform(0.5, 2.0, 7),
        ),
        variant="traced bins",
    ),
]

# --- compositions ---------------------------------------------------------------------------------

ROWS += [
    Row(
        "composition",
        lambda x: (x - fnp.mean(x, axis=0)) / fnp.std(x, axis=0),
        ((4, 2),),
        variant="standardize",
    ),
    Row(
        "composition",
        lambda x: fnp.var(fnp.cumsum(x, axis=1), axis=1, ddof=1),
        ((3, 4),),
        variant="var-of-cumsum",
    ),
]

# --- declared without a derivative ----------------------------------------------------------------

NONDIFF = [
    Nondiff("iscomplex", lambda x: fnp.iscomplex(x + 1j * (x > 0))),
    Nondiff("isreal", lambda x: fnp.isreal(x + 1j * (x > 0))),
    Nondiff("all", lambda x: fnp.all(x > 0)),
    Nondiff("any", lambda x: fnp.any(x > 0, axis=0, keepdims=True)),
    Nondiff("count_nonzero", lambda x: fnp.count_nonzero(x > 0)),
]
