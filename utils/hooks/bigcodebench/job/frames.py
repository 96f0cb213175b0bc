"""pandas values in BigCodeBench's replay encoding (`job.codec`, which calls these).

Encoders take `(encoder, value, depth)` and give `[tag, ...]`, with the values' arrays encoded
as numpy arrays by the codec; a column or index of a dtype not listed here cannot be carried
(`encoder.fail`). Decoders take `(args, item)`, `item` decoding a nested value, and build the
object through pandas' own constructors. Carried: `DataFrame`, `Series`, `Index` of a numpy
dtype, `RangeIndex`, `MultiIndex`, `DatetimeIndex` (with its time zone and frequency),
`CategoricalIndex`, columns of a numpy dtype, categoricals, time-zone datetimes and the
extension dtypes named in NAMED_DTYPES (strings, nullable numbers), and the
scalars `Timestamp`, `Timedelta`, `NaT` and `NA`. Names go through the codec as any value.
"""

# pandas' extension dtypes carried as their values (objects) and their name: strings (pandas 3
# makes "str" the default for text), nullable integers, floats and booleans
NAMED_DTYPES = frozenset(
    ["str", "string", "boolean", "Float32", "Float64"]
    + [f"{sign}Int{bits}" for sign in ("", "U") for bits in (8, 16, 32, 64)]
)


def encoder(value, pd):
    """The encoder for `value`'s exact pandas class, or None."""
    return {
        pd.DataFrame: _frame,
        pd.Series: _series,
        pd.Index: _index,
        pd.RangeIndex: _index,
        pd.MultiIndex: _index,
        pd.DatetimeIndex: _index,
        pd.CategoricalIndex: _index,
        pd.Timestamp: _timestamp,
        pd.Timedelta: lambda e, v, d: ["Timedelta", int(v.value), v.unit],
        pd.Period: lambda e, v, d: ["Period", str(v), v.freqstr],
        type(pd.NaT): lambda e, v, d: ["NaT"],
        type(pd.NA): lambda e, v, d: ["NA"],
    }.get(type(value))


def _frame(e, frame, d):
    columns = [_values(e, frame.iloc[:, i], d) for i in range(frame.shape[1])]
    return ["DataFrame", _index(e, frame.columns, d), _index(e, frame.index, d), columns]


def _series(e, series, d):
    return ["Series", _values(e, series, d), _index(e, series.index, d), e.encode(series.name, d)]


def _values(e, series, d):
    """A column's values: ["numpy", array] | ["categorical", codes, categories, ordered] |
    ["datetimetz", UTC datetime64 array, zone name]."""
    dtype = series.dtype
    kind = type(dtype).__name__
    if _numpy_dtype(dtype):
        return ["numpy", e.encode(series.to_numpy(), d)]
    if kind == "CategoricalDtype":
        cat = series.array
        return ["categorical", e.encode(cat.codes, d), _index(e, cat.categories, d), cat.ordered]
    if kind == "DatetimeTZDtype":
        utc = series.dt.tz_convert("UTC").dt.tz_localize(None).to_numpy()
        return ["datetimetz", e.encode(utc, d), str(dtype.tz)]
    if str(dtype) in NAMED_DTYPES:
        return ["named", e.encode(series.to_numpy(dtype=object), d), str(dtype)]
    e.fail(f"a pandas column of dtype {dtype}")


def _index(e, index, d):
    name = type(index).__name__
    names = [e.encode(n, d) for n in index.names]
    if name == "RangeIndex":
        return ["RangeIndex", index.start, index.stop, index.step, names[0]]
    if name == "MultiIndex":
        levels = [_index(e, level, d) for level in index.levels]
        codes = [e.encode(c, d) for c in index.codes]
        return ["MultiIndex", levels, codes, names]
    if name == "DatetimeIndex":
        zone = None if index.tz is None else str(index.tz)
        utc = index if zone is None else index.tz_convert("UTC").tz_localize(None)
        return ["DatetimeIndex", e.encode(utc.to_numpy(), d), zone, index.freqstr, names[0]]
    if name == "CategoricalIndex":
        return ["CategoricalIndex", _values(e, index.to_series(), d), names[0]]
    if name == "Index" and _numpy_dtype(index.dtype):
        return ["Index", e.encode(index.to_numpy(), d), names[0]]
    if name == "Index" and str(index.dtype) in NAMED_DTYPES:
        return ["NamedIndex", _values(e, index.to_series(), d), names[0]]
    e.fail(f"a pandas {name} of dtype {index.dtype}")


def _numpy_dtype(dtype):
    import numpy as np

    return isinstance(dtype, np.dtype)


def _timestamp(e, stamp, d):
    zone = None if stamp.tz is None else str(stamp.tz)
    return ["Timestamp", int(stamp.value), zone, stamp.unit]


def _array(args, item):
    """A column's values (`_values`) as a numpy array or pandas extension array."""
    import pandas as pd

    kind = args[0]
    if kind == "numpy":
        return item(args[1])
    if kind == "categorical":
        categories = _decode_any_index(args[2], item)
        return pd.Categorical.from_codes(item(args[1]), categories=categories, ordered=args[3])
    if kind == "datetimetz":
        return pd.DatetimeIndex(item(args[1])).tz_localize("UTC").tz_convert(args[2]).array
    if kind == "named" and args[2] in NAMED_DTYPES:
        return pd.array(item(args[1]), dtype=args[2])
    raise ValueError(f"unknown pandas column kind {kind!r}")


def _decode_any_index(data, item):
    if type(data) is not list or not data:
        raise ValueError("malformed pandas index")
    decoder = INDEX_DECODERS.get(data[0])
    if decoder is None:
        raise ValueError(f"unknown pandas index {data[0]!r}")
    return decoder(data[1:], item)


def _decode_range(args, item):
    import pandas as pd

    return pd.RangeIndex(int(args[0]), int(args[1]), int(args[2]), name=item(args[3]))


def _decode_index(args, item):
    import pandas as pd

    values = item(args[0])
    return pd.Index(values, dtype=values.dtype, name=item(args[1]))


def _decode_named_index(args, item):
    import pandas as pd

    return pd.Index(_array(args[0], item), name=item(args[1]))


def _decode_multi(args, item):
    import pandas as pd

    levels = [_decode_any_index(level, item) for level in args[0]]
    codes = [item(c) for c in args[1]]
    return pd.MultiIndex(levels=levels, codes=codes, names=[item(n) for n in args[2]])


def _decode_datetimes(args, item):
    import pandas as pd

    index = pd.DatetimeIndex(item(args[0]), name=item(args[3]))
    if args[1] is not None:
        index = index.tz_localize("UTC").tz_convert(args[1])
    return pd.DatetimeIndex(index, freq=args[2]) if args[2] else index


def _decode_categories(args, item):
    import pandas as pd

    return pd.CategoricalIndex(_array(args[0], item), name=item(args[1]))


def _decode_frame(args, item):
    import pandas as pd

    columns, index = _decode_any_index(args[0], item), _decode_any_index(args[1], item)
    arrays = {i: _array(values, item) for i, values in enumerate(args[2])}
    frame = pd.DataFrame(arrays, index=index) if arrays else pd.DataFrame(index=index)
    frame.columns = columns
    return frame


def _decode_series(args, item):
    import pandas as pd

    index = _decode_any_index(args[1], item)
    return pd.Series(_array(args[0], item), index=index, name=item(args[2]))


def _decode_timestamp(args, item):
    import pandas as pd

    stamp = pd.Timestamp(int(args[0]), unit="ns")
    if args[1] is not None:
        stamp = stamp.tz_localize("UTC").tz_convert(args[1])
    return stamp.as_unit(args[2])


def _decode_timedelta(args, item):
    import pandas as pd

    return pd.Timedelta(int(args[0]), unit="ns").as_unit(args[1])


def _decode_missing(name):
    def decode(args, item):
        import pandas as pd

        return getattr(pd, name)

    return decode


def _decode_period(args, item):
    import pandas as pd

    return pd.Period(str(args[0]), freq=str(args[1]))


INDEX_DECODERS = {
    "RangeIndex": _decode_range,
    "MultiIndex": _decode_multi,
    "DatetimeIndex": _decode_datetimes,
    "CategoricalIndex": _decode_categories,
    "Index": _decode_index,
    "NamedIndex": _decode_named_index,
}
DECODERS = {
    "DataFrame": _decode_frame,
    "Series": _decode_series,
    **INDEX_DECODERS,
    "Timestamp": _decode_timestamp,
    "Timedelta": _decode_timedelta,
    "Period": _decode_period,
    "NaT": _decode_missing("NaT"),
    "NA": _decode_missing("NA"),
}
