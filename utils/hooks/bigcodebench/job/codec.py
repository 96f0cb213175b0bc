"""A value encoding for BigCodeBench's replayed verdicts that is safe to decode.

The candidate's process encodes what `task_func` was given and returned
(`job.record`); a process that runs no candidate code decodes it and hands it to the
task's test (`replay.run`). Decoding must not let the encoded data run code or make
objects of classes it chooses: it builds only the types listed here, each through its own
trusted constructor (no pickle; a class is looked up by a name the data gives only for
exceptions, warnings and scikit-learn estimators, among modules already loaded). A value of
any other type, or a subclass of one of these, cannot be encoded (`Unreplayable`, naming it).

The encoding is JSON: `None`, booleans, ints (up to 4,000 digits) and strings stand for
themselves, finite floats too; every other value is a list `[tag, ...]`, so a JSON list is
always a tag. Encoded here: the builtin containers and scalars, `datetime`'s types (time zones:
fixed offsets, `zoneinfo`, `pytz`), `Decimal`, `collections`' `Counter`, `OrderedDict`,
`deque` and `defaultdict` (of a builtin factory), POSIX paths, `array.array`, numpy arrays
(not of a structured dtype) and scalars, and the test's own mocks by reference (`refs`);
pandas values in `job.frames`, matplotlib figures in `job.plots`, rsa keys
and scikit-learn estimators in `job.objects`. Identity is not kept (a list held
twice decodes as two lists).
"""

import array
import base64
import binascii
import collections
import datetime
import decimal
import math
import pathlib
import sys

from . import frames, objects, plots

MAX_NODES = 1_000_000  # values in one encoded value
MAX_BYTES = 16 * 1024 * 1024  # of array and bytes payloads in one encoded value
MAX_DEPTH = 200
_BIG_INT = 10**4000  # json reads ints up to Python's 4300-digit limit
_FACTORIES = {"list": list, "dict": dict, "set": set, "int": int, "float": float, "str": str}


class Unreplayable(ValueError):
    """A value this encoding does not carry (its type, its size, its depth)."""


def encode(value, refs=()):
    """`value` as JSON-able data; `Unreplayable` names what it cannot carry. An object that
    is one of `refs` (the test's own mocks) is carried as its place there."""
    return _Encoder(refs).encode(value, 0)


def encoded_or_none(value, refs=()):
    """`encode(value, refs)`, or None where the value cannot be carried (arguments, which the
    record and the replay only compare and update)."""
    try:
        return encode(value, refs)
    except Unreplayable:
        return None


def decode(data, refs=()):
    """The value `encode` gave `data` for, a reference being that place in `refs` (which must
    then be the same objects, made again); `ValueError` on anything malformed."""
    try:
        return _Item(0, {}, list(refs))(data)
    except (KeyError, IndexError, TypeError, OverflowError, binascii.Error) as exc:
        raise ValueError(f"malformed encoded value ({type(exc).__name__}: {exc})") from None


def is_mock(value):
    mock = sys.modules.get("unittest.mock")
    return mock is not None and isinstance(value, mock.NonCallableMock)


def descend(mock, path, stop=()):
    """The mock `path` leads to from `mock` (`_Encoder.reference`) through the links a mock
    has and nothing else (`child`), or None where a step is not such a link or reaches one
    of `stop` (ids). The path comes from the record: untrusted."""
    for part in path.replace("()", ".()").split("."):
        if part:
            mock = child(mock, part)
            if mock is None or id(mock) in stop:
                return None
    return mock


def child(mock, part):
    """`mock`'s return value ("()") or its child `part` (a public name or a MagicMock's magic
    method), a mock whose parent is `mock`; else None: never an attribute of the mock's class
    (`configure_mock`, `assert_*`), a private name, another dunder, or what is not a mock."""
    if not is_mock(mock):
        return None
    if part == "()":
        found = mock.return_value
        return found if is_mock(found) else None
    library = sys.modules["unittest.mock"]
    if part in library._all_magics:
        if not isinstance(mock, library.MagicMixin):
            return None
    elif not part.isidentifier() or part.startswith("_") or hasattr(type(mock), part):
        return None
    try:
        found = getattr(mock, part)  # (a child: made by the mock's own __getattr__)
    except AttributeError:  # (a spec without it)
        return None
    linked = is_mock(found) and found._mock_new_parent is mock
    return found if linked and found._mock_new_name == part else None


def callable_mock(value):
    """Whether `value` is a mock that can be called (what the replay may call)."""
    mock = sys.modules.get("unittest.mock")
    return mock is not None and isinstance(value, mock.CallableMixin)


def _reference(args, item):
    found = descend(item.refs[int(args[0])], str(args[1]) if len(args) > 1 else "")
    if found is None:
        raise ValueError(f"a reference to a mock the test does not have: {args!r}")
    return found


def _name(value):
    cls = type(value)
    return f"{getattr(cls, '__module__', '?')}.{getattr(cls, '__qualname__', '?')}"


class _Encoder:
    def __init__(self, refs):
        self.nodes, self.bytes, self.figures = 0, 0, {}  # figures: id -> (number, figure)
        self.refs = list(refs)

    def encode(self, value, depth):
        self.nodes += 1
        if self.nodes > MAX_NODES or depth > MAX_DEPTH:
            raise Unreplayable(f"a value larger than {MAX_NODES} items or deeper than {MAX_DEPTH}")
        cls = type(value)
        if value is None or cls in (bool, str):
            return value
        if cls is int:
            return value if abs(value) < _BIG_INT else ["int", format(value, "x")]
        if cls is float:
            return value if math.isfinite(value) else ["float", repr(value), _which_nan(value)]
        reference = self.reference(value) if self.refs else None
        if reference is not None:  # one of the test's own objects (identity kept)
            return reference
        encoder = _BUILTIN.get(cls) or _library_encoder(value)
        if encoder is None:
            raise Unreplayable(f"a value of type {_name(value)}")
        return encoder(self, value, depth + 1)

    def reference(self, value):
        """["ref", place, path]: `value` is `refs[place]`, or the mock `path` leads to from it
        ("().json": its return value's `json`, as `mock_calls` names them); else None."""
        path, node = [], value
        for _ in range(MAX_DEPTH):
            place = next((i for i, ref in enumerate(self.refs) if ref is node), None)
            if place is not None:
                return ["ref", place, ".".join(reversed(path))]
            name = getattr(node, "_mock_new_name", None) if is_mock(node) else None
            if type(name) is not str:
                return None
            path.append(name)
            node = node._mock_new_parent
        return None

    def items(self, values, depth):
        return [self.encode(item, depth) for item in values]

    def fail(self, what):
        raise Unreplayable(what)

    def payload(self, data):
        self.bytes += len(data)
        if self.bytes > MAX_BYTES:
            raise Unreplayable(f"values of more than {MAX_BYTES} bytes")
        return base64.b64encode(data).decode("ascii")


def _which_nan(value):
    """Which shared NaN object `value` is ("numpy", "math" or ""): a container holding
    `np.nan` equals one holding the same object (identity comes first), not another NaN."""
    numpy = sys.modules.get("numpy")
    if numpy is not None and value is numpy.nan:
        return "numpy"
    return "math" if value is math.nan else ""  # noqa: PLW0177 (identity is the point)


def _float(args, item):
    if len(args) > 1 and args[1] == "numpy":
        import numpy

        return numpy.nan
    return math.nan if len(args) > 1 and args[1] == "math" else float(args[0])


def _pairs(encoder, mapping, depth):
    return [[encoder.encode(k, depth), encoder.encode(v, depth)] for k, v in mapping.items()]


def _tz(value):
    """A time zone as data: ["utc"|"offset", seconds] | ["zoneinfo"|"pytz", key]."""
    if value is None:
        return None
    if type(value) is datetime.timezone:
        return ["offset", value.utcoffset(None).total_seconds(), value.tzname(None)]
    key = getattr(value, "key", None) if _name(value) == "zoneinfo.ZoneInfo" else None
    if type(key) is str:
        return ["zoneinfo", key]
    zone = getattr(value, "zone", None)
    if _name(value).startswith("pytz.") and type(zone) is str:
        return ["pytz", zone]
    raise Unreplayable(f"a time zone of type {_name(value)}")


def _datetime(encoder, value, depth):
    naive = value.replace(tzinfo=None)
    offset = value.utcoffset()
    utc = None if offset is None else (naive - offset).isoformat()
    return ["datetime", naive.isoformat(), value.fold, _tz(value.tzinfo), utc]


_BUILTIN = {
    list: lambda e, v, d: ["list", e.items(v, d)],
    tuple: lambda e, v, d: ["tuple", e.items(v, d)],
    set: lambda e, v, d: ["set", e.items(v, d)],
    frozenset: lambda e, v, d: ["frozenset", e.items(v, d)],
    dict: lambda e, v, d: ["dict", _pairs(e, v, d)],
    bytes: lambda e, v, d: ["bytes", e.payload(v)],
    bytearray: lambda e, v, d: ["bytearray", e.payload(bytes(v))],
    complex: lambda e, v, d: ["complex", repr(v.real), repr(v.imag)],
    range: lambda e, v, d: ["range", v.start, v.stop, v.step],
    datetime.datetime: _datetime,
    datetime.date: lambda e, v, d: ["date", v.isoformat()],
    datetime.time: lambda e, v, d: ["time", v.replace(tzinfo=None).isoformat(), _tz(v.tzinfo)],
    datetime.timedelta: lambda e, v, d: ["timedelta", v.days, v.seconds, v.microseconds],
    decimal.Decimal: lambda e, v, d: ["decimal", str(v)],
    collections.Counter: lambda e, v, d: ["Counter", _pairs(e, v, d)],
    collections.OrderedDict: lambda e, v, d: ["OrderedDict", _pairs(e, v, d)],
    collections.deque: lambda e, v, d: ["deque", e.items(v, d), v.maxlen],
    pathlib.PosixPath: lambda e, v, d: ["PosixPath", str(v)],
    array.array: lambda e, v, d: ["array", v.typecode, e.payload(v.tobytes())],
    pathlib.PurePosixPath: lambda e, v, d: ["PurePosixPath", str(v)],
    collections.defaultdict: lambda e, v, d: [
        "defaultdict",
        _factory(v.default_factory),
        _pairs(e, v, d),
    ],
}


def _factory(function):
    name = next((k for k, f in _FACTORIES.items() if f is function), None)
    if function is not None and name is None:
        raise Unreplayable("a defaultdict whose factory is not a builtin type")
    return name


def _library_encoder(value):
    """The encoder for a numpy or pandas value (only if the program's process loaded them)."""
    np, pd = sys.modules.get("numpy"), sys.modules.get("pandas")
    cls = type(value)
    if np is not None and cls is np.ndarray:
        return _ndarray
    if np is not None and isinstance(value, np.generic) and cls.__module__ == "numpy":
        return lambda e, v, d: ["npscalar", _dtype(v.dtype), e.payload(v.tobytes())]
    if pd is not None and cls.__module__.split(".")[0] == "pandas":
        return frames.encoder(value, pd)
    if cls.__module__.startswith("matplotlib."):
        return plots.encoder(value)
    return objects.encoder(value)


def _dtype(dtype):
    if dtype.fields is not None or dtype.subdtype is not None:
        raise Unreplayable(f"a numpy array of the structured dtype {dtype}")
    return dtype.str if dtype.kind != "O" else "O"


def _ndarray(encoder, value, depth):
    dtype = _dtype(value.dtype)
    if dtype == "O":
        return ["ndarray", "O", list(value.shape), encoder.items(value.ravel().tolist(), depth)]
    data = value.tobytes(order="C")
    return ["ndarray", dtype, list(value.shape), encoder.payload(data)]


class _Item:
    """Decodes a nested value (`depth` deep) with the figures met so far in this value."""

    def __init__(self, depth, figures, refs):
        self.depth, self.figures, self.refs = depth, figures, refs

    def __call__(self, data):
        if self.depth > MAX_DEPTH:
            raise ValueError("encoded value nested too deep")
        if data is None or type(data) in (bool, int, str, float):
            return data
        if type(data) is not list or not data or type(data[0]) is not str:
            raise ValueError(f"malformed encoded value of type {type(data).__name__}")
        tag, args = data[0], data[1:]
        decoder = (
            _DECODERS.get(tag)
            or frames.DECODERS.get(tag)
            or plots.DECODERS.get(tag)
            or objects.DECODERS.get(tag)
        )
        if decoder is None:
            raise ValueError(f"unknown encoded type {tag!r}")
        return decoder(args, _Item(self.depth + 1, self.figures, self.refs))


def _decode_tz(data):
    if data is None:
        return None
    kind, key = data[0], data[1]
    if kind == "offset":
        name = data[2] if len(data) > 2 else None
        offset = datetime.timedelta(seconds=float(key))
        if offset == datetime.timedelta(0) and name == "UTC":
            return datetime.timezone.utc
        return datetime.timezone(offset) if name is None else datetime.timezone(offset, name)
    if kind == "zoneinfo":
        import zoneinfo

        return zoneinfo.ZoneInfo(str(key))
    if kind == "pytz":
        import pytz

        return pytz.timezone(str(key))
    raise ValueError(f"unknown time zone kind {kind!r}")


def _decode_datetime(args, item):
    naive, fold, zone, utc = args
    value = datetime.datetime.fromisoformat(naive).replace(fold=int(fold))
    tz = _decode_tz(zone)
    if tz is None:
        return value
    if zone[0] == "pytz":  # pytz zones carry their offset per moment: from the UTC time
        return tz.fromutc(datetime.datetime.fromisoformat(utc).replace(tzinfo=tz))
    return value.replace(tzinfo=tz)


def _decode_ndarray(args, item):
    import numpy as np

    dtype, shape, payload = args
    shape = tuple(int(n) for n in shape)
    if dtype == "O":
        array = np.empty(len(payload), dtype=object)
        for i, x in enumerate(payload):  # one by one: a list item is not broadcast
            array[i] = item(x)
        return array.reshape(shape)
    return np.frombuffer(base64.b64decode(payload), dtype=np.dtype(dtype)).reshape(shape).copy()


def _decode_scalar(args, item):
    import numpy as np

    return np.frombuffer(base64.b64decode(args[1]), dtype=np.dtype(args[0]))[0]


def _items(args, item):
    return [item(x) for x in args[0]]


def _mapping(args, item):
    return [(item(k), item(v)) for k, v in args[-1]]


_DECODERS = {
    "int": lambda a, item: int(a[0], 16),
    "ref": _reference,
    "float": _float,
    "list": _items,
    "tuple": lambda a, item: tuple(_items(a, item)),
    "set": lambda a, item: set(_items(a, item)),
    "frozenset": lambda a, item: frozenset(_items(a, item)),
    "dict": lambda a, item: dict(_mapping(a, item)),
    "bytes": lambda a, item: base64.b64decode(a[0]),
    "bytearray": lambda a, item: bytearray(base64.b64decode(a[0])),
    "complex": lambda a, item: complex(float(a[0]), float(a[1])),
    "range": lambda a, item: range(int(a[0]), int(a[1]), int(a[2])),
    "datetime": _decode_datetime,
    "date": lambda a, item: datetime.date.fromisoformat(a[0]),
    "time": lambda a, item: datetime.time.fromisoformat(a[0]).replace(tzinfo=_decode_tz(a[1])),
    "timedelta": lambda a, item: datetime.timedelta(int(a[0]), int(a[1]), int(a[2])),
    "decimal": lambda a, item: decimal.Decimal(str(a[0])),
    "Counter": lambda a, item: collections.Counter(dict(_mapping(a, item))),
    "OrderedDict": lambda a, item: collections.OrderedDict(_mapping(a, item)),
    "deque": lambda a, item: collections.deque(_items(a, item), a[1]),
    "defaultdict": lambda a, item: collections.defaultdict(
        _FACTORIES[a[0]] if a[0] is not None else None, _mapping(a, item)
    ),
    "PosixPath": lambda a, item: pathlib.PosixPath(str(a[0])),
    "array": lambda a, item: array.array(str(a[0]), base64.b64decode(a[1])),
    "PurePosixPath": lambda a, item: pathlib.PurePosixPath(str(a[0])),
    "ndarray": _decode_ndarray,
    "npscalar": _decode_scalar,
}
