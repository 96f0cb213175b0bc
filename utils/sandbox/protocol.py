"""The wire format between the harness and a candidate: plain data only, as a flat token list.

Plain data: None, bool, int (any size), float (inf and nan included), complex, str, bytes, and
lists, tuples, sets, frozensets, dicts and `collections.Counter`s of those; exact types (a
subclass, e.g. an int with a rigged `__eq__`, is refused); a numpy scalar travels as the Python
value it holds; a `re.Match` travels as the data it holds and arrives as a stand-in that answers
from it (`matches`: its pattern is never run on the receiving side). A message is a
4-byte length and a body (`to_wire`): a 4-byte length, a JSON array of (tag, payload) pairs in
prefix order (a container is its tag and its length, followed by its items), then a binary
section. The JSON has no nesting, so neither side recurses: a value of any depth crosses, and
the only RecursionError a test sees is the one plain Python would raise comparing it. Big
integers travel in hexadecimal (linear time both ways, exempt from Python's 4300-digit limit
on decimal conversion); a complex number as the IEEE doubles of its parts (bit for bit). Long
strings travel as UTF-8 in the binary section (HumanEval/15 returns 147 MB of them: JSON would
escape and scan every character), long bytes as they are. A long list is packed where it can
be, so that C code handles it: integers alone (HumanEval/100 returns a million) as 64-bit
integers in the binary section; floats and small integers (HumanEval/130 returns a million of
them mixed) as their IEEE doubles there (bit for bit) with the positions of the integers; other
scalars that JSON carries exactly (None, bool, small int, float, str) as one JSON array. A
short value of those scalars and of lists and str-keyed dicts of them (most answers:
`{"result": True}`) is a body of its own, plain JSON (`SHORT`), which the C codec reads
without the token loop.

Decoding is bounded: MAX_MESSAGE bytes, MAX_VALUES values, MAX_HASHED_DEPTH levels inside a
set or dict, and a `check` callback called every CHECK_EVERY values and every few set or dict
insertions (integers that share one hash make each insertion cost as much as the set is
large), which the harness uses to stop at the job's time limit. Whatever a malformed message
provokes comes out as NotPlainData, never as an exception a test could take for the
candidate's. Messages on sockets: `messages`. This module is imported by the untrusted side
too; it imports nothing of the harness.
"""

from __future__ import annotations

import json
import math
import re
import struct
import sys
from collections import Counter
from collections.abc import Callable

from . import matches
from .limits import MAX_MESSAGE, MAX_VALUES
from .packed import JSON_EXACT, PACK_FROM, SAFE_INT, UNPACK, Binary, NotPlainData, pack

CHECK_EVERY = 4096  # values decoded between two calls of `check`
INSERTS_PER_CHECK = 16  # set / dict insertions between two calls of `check`
_SCALARS = {type(None): "N", bool: "B", str: "s"}
_CONTAINERS = {list: "l", tuple: "t", set: "S", frozenset: "Z", dict: "d", Counter: "C"}
_MAPPINGS = (dict, Counter)
MATCH = "M"  # a container of the `matches.FIELDS` values a regex match travels as
_MATCH_TYPES = matches.MATCH_TYPES
_CONTAINER_TAGS = frozenset([*_CONTAINERS.values(), MATCH])
_NOTHING = object()
# Hashing a tuple recurses in C with no depth check: a tuple a million deep crashes the process
# that hashes it. Inside a set, frozenset or dict (whose building hashes), nesting is capped.
MAX_HASHED_DEPTH = 10_000
LONG_FROM = 4096  # strings and bytes at least this long travel in the binary section
LONG_STRING, LONG_BYTES = "x", "y"
NAN = "F"  # a NaN travels as the hex digits of its IEEE double
COMPLEX = "c"  # a complex number as the hex digits of its two doubles (real, imaginary)
SHORT, SHORT_MAX = b"J", 4096  # a body that is plain JSON starts with SHORT; at most SHORT_MAX
#                                bytes (no token count bounds it: 4 KiB builds little)
# Counted in the JSON text before it is parsed (parsing is C code no check interrupts, and a text
# of tiny lists builds a gigabyte of them): at most MAX_ELEMENTS elements (tags, payloads and
# the items of packed lists: two per value at most) and MAX_ARRAYS arrays (packed lists: one
# per PACK_FROM values at most). The encoder escapes commas and brackets inside strings where
# a message would otherwise count more (strings full of them).
MAX_ELEMENTS = 2 * MAX_VALUES + 64
MAX_ARRAYS = 1 + 2 * MAX_VALUES // PACK_FROM
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_STRUCTURE_ESCAPES = {ord(c): f"\\u{ord(c):04x}" for c in ",[]{}"}
_ENCODER = json.JSONEncoder(separators=(",", ":"))  # built once: json.dumps would per call
_DECODER = json.JSONDecoder()


def to_wire(value, numpy_scalars: bool = True) -> bytes:
    """Plain data as a message body (`NotPlainData` for anything else, for more than
    MAX_VALUES values, or for strings and bytes adding up to more than MAX_MESSAGE; and for
    numpy scalars unless `numpy_scalars`)."""
    if _json_exact(value, 3):
        text = _ENCODER.encode(value).encode()
        if len(text) < SHORT_MAX:
            return SHORT + text
    tokens: list = []
    blobs: list[bytes] = []  # the binary section, in the order of the tokens that use it
    stack = [value]
    size = count = 0
    while stack:
        item = stack.pop()
        kind = type(item)
        count += 1
        if kind is int and -SAFE_INT < item < SAFE_INT:  # the common cases first
            tokens += ("i", item)
            continue
        if kind in _CONTAINERS:
            count += len(item)
            if count + len(stack) >= MAX_VALUES:  # cycles end here too
                raise NotPlainData(f"more than {MAX_VALUES} values")
            packed = pack(item, blobs) if kind is list and len(item) >= PACK_FROM else None
            if packed:
                size += packed[2]
                tokens += packed[:2]
                continue
            count -= len(item)  # counted as they come off the stack
            tokens += (_CONTAINERS[kind], len(item))
            if kind in _MAPPINGS:
                for key, entry in reversed(list(item.items())):
                    stack += (entry, key)
            else:
                stack.extend(reversed(item) if kind in (list, tuple) else list(item))
            continue
        if (kind is str or kind is bytes) and len(item) >= LONG_FROM:
            blobs.append(item if kind is bytes else item.encode("utf-8", "surrogatepass"))
            size += len(blobs[-1])  # (lone surrogates pass too)
            tokens += (LONG_BYTES if kind is bytes else LONG_STRING, len(blobs[-1]))
            continue
        try:
            tag, payload = _scalar_token(item, kind, numpy_scalars)
        except NotPlainData:  # (off the common path: a match is rare)
            if kind not in _MATCH_TYPES:
                raise
            fields = matches.fields(item)  # (each counted as it comes off the stack)
            tokens += (MATCH, len(fields))
            stack.extend(reversed(fields))
            continue
        if tag in "sbI":
            size += len(payload)
        tokens += (tag, payload)
    if size > MAX_MESSAGE:
        raise NotPlainData(f"message exceeds {MAX_MESSAGE} bytes")
    text = _ENCODER.encode(tokens)
    if text.count(",") >= MAX_ELEMENTS or _arrays(text) > MAX_ARRAYS:
        text = _STRING.sub(_escape_structure, text)  # strings full of commas or brackets
    data = text.encode()
    return b"".join([len(data).to_bytes(4, "big"), data, *blobs])


def _arrays(text: str) -> int:
    return text.count("[") + text.count("{")


def _escape_structure(match: re.Match) -> str:
    """A JSON string with its commas and brackets as escapes (the same string), so that
    the decoder's count of them before parsing counts the message's structure only."""
    return match.group().translate(_STRUCTURE_ESCAPES)


def _json_exact(value, depth: int) -> bool:
    """Whether JSON carries `value` exactly: JSON-exact scalars (small integers), and lists and
    str-keyed dicts of them at most `depth` deep and 16 items long (checking more costs more
    than the token loop)."""
    kind = type(value)
    if kind is str:  # a long one travels in the binary section: not worth encoding as JSON
        return len(value) < LONG_FROM
    if kind in JSON_EXACT:  # (JSON writes every NaN as NaN: its sign and payload are lost)
        return (
            -SAFE_INT < value < SAFE_INT
            if kind is int
            else kind is not float or not math.isnan(value)
        )
    if not depth or kind not in (list, dict) or len(value) > PACK_FROM:
        return False
    if kind is dict:
        return all(type(key) is str for key in value) and all(
            _json_exact(item, depth - 1) for item in value.values()
        )
    return all(_json_exact(item, depth - 1) for item in value)


def _scalar_token(item, kind, numpy_scalars: bool = True) -> tuple[str, object]:
    if kind in _SCALARS:
        return _SCALARS[kind], item
    if kind is int:
        return ("i", item) if -SAFE_INT < item < SAFE_INT else ("I", hex(item))
    if kind is float:
        if math.isnan(item):  # with its sign and payload
            return NAN, struct.pack(">d", item).hex()
        return "f", item if math.isfinite(item) else repr(item)
    if kind is bytes:
        return "b", item.hex()
    if kind is complex:
        return COMPLEX, struct.pack(">dd", item.real, item.imag).hex()
    if not numpy_scalars:
        raise NotPlainData(f"{kind.__name__} is not a built-in scalar")
    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(item, numpy.generic):
        return _numpy_scalar(item)
    raise NotPlainData(f"{kind.__name__} is not plain data")


def _numpy_scalar(item) -> tuple[str, object]:
    """A numpy scalar (np.int64, np.float32, np.bool_, np.str_ ...) travels as the Python
    value it holds, which the test compares as it would the numpy value; arrays stay
    non-plain."""
    value = item.item()
    if type(value) not in (bool, int, float, complex, str, bytes):  # e.g. a subclass's item()
        raise NotPlainData(f"{type(item).__name__} is not plain data")
    return _scalar_token(value, type(value))


_PAYLOAD_TYPES = {
    "N": type(None),
    "B": bool,
    "s": str,
    "i": int,
    "I": str,
    "b": str,
    NAN: str,
    COMPLEX: str,
}
_DECODE_SCALAR = {
    "N": lambda p: None,
    "B": bool,
    "s": str,
    "i": int,
    "I": lambda p: int(p, 16),
    "b": bytes.fromhex,
    NAN: lambda p: _nan(p),
    COMPLEX: lambda p: _complex(p),
}


def _nan(bits: str) -> float:
    """A NaN from the 16 hex digits of its IEEE double (sign and payload kept)."""
    value = struct.unpack(">d", bytes.fromhex(bits))[0] if len(bits) == 16 else 0.0
    if not math.isnan(value):
        raise ValueError("not a NaN")
    return value


def _complex(bits: str) -> complex:
    """A complex number from the 32 hex digits of its two IEEE doubles."""
    if len(bits) != 32:
        raise ValueError("not two doubles")
    return complex(*struct.unpack(">dd", bytes.fromhex(bits)))


def from_wire(body, check: Callable[[], None] | None = None):
    """The value `to_wire` encoded (a body as bytes; or, with no binary section, the JSON text
    alone as a str); `NotPlainData` for anything malformed. `check` is called regularly and
    may raise to abandon decoding (the harness's time limit)."""
    try:
        if body[:1] == SHORT:
            if len(body) > SHORT_MAX:
                raise NotPlainData("malformed message: long JSON body")
            return _DECODER.decode(str(body[1:], "ascii"))  # only plain data comes out of JSON
        if type(body) is str:
            text, binary = body, Binary(memoryview(b""))
        else:
            view = memoryview(body)
            size = int.from_bytes(view[:4], "big")
            text, binary = str(view[4 : 4 + size], "ascii"), Binary(view[4 + size :])
            if len(view) < 4 + size:
                raise NotPlainData("malformed message: truncated")
        if text.count(",") >= MAX_ELEMENTS or _arrays(text) > MAX_ARRAYS:  # before parsing
            raise NotPlainData(f"more than {MAX_VALUES} values")
        (check or (lambda: None))()
        value = _decode_tokens(_DECODER.decode(text), check or (lambda: None), binary)
        if binary.taken != len(binary.view):
            raise NotPlainData("malformed message: trailing bytes")
        return value
    except NotPlainData:
        raise
    except (ValueError, TypeError, KeyError, IndexError, RecursionError) as exc:
        # whatever a forged message provokes is a malformed message, never an exception a
        # test could take for the candidate's (UnicodeDecodeError, an unhashable tag, hashing
        # a tuple too deep to hash ...)
        raise NotPlainData(f"malformed message: {type(exc).__name__}: {str(exc)[:100]}") from None


def _decode_tokens(tokens, check: Callable[[], None], binary: Binary):
    if type(tokens) is not list or len(tokens) % 2 or len(tokens) > 2 * MAX_VALUES:
        raise NotPlainData(f"malformed message, or more than {MAX_VALUES} values")
    stack: list[list] = []  # open containers: [tag, items so far, items still to come]
    hashed_from = None  # stack index of the outermost open container that will be hashed
    result = _NOTHING
    count = len(tokens) // 2
    for index in range(0, len(tokens), 2):
        if index and not index % (2 * CHECK_EVERY):
            check()
        if result is not _NOTHING:
            raise NotPlainData("malformed message: trailing values")
        tag, payload = tokens[index], tokens[index + 1]
        if type(tag) is not str:
            raise NotPlainData("malformed message: bad tag")
        if tag == "i" and type(payload) is int:  # the common case first
            value = payload
        elif tag == LONG_STRING:
            value = str(binary.take(payload), "utf-8", "surrogatepass")
        elif tag == LONG_BYTES:
            value = bytes(binary.take(payload))
        elif tag in UNPACK:
            value = UNPACK[tag](payload, binary)
            count += len(value)
            if count > MAX_VALUES:
                raise NotPlainData(f"more than {MAX_VALUES} values")
            check()
        elif tag in _CONTAINER_TAGS:
            length = (payload * 2 if tag in "dC" else payload) if type(payload) is int else -1
            if not 0 <= length <= (len(tokens) - index) // 2:
                raise NotPlainData("malformed message: bad container length")
            if length:
                if hashed_from is None and stack and _hashes_next(stack[-1]):
                    hashed_from = len(stack)
                if hashed_from is not None and len(stack) - hashed_from >= MAX_HASHED_DEPTH:
                    raise NotPlainData(
                        f"a set element or dict key nested more than {MAX_HASHED_DEPTH} deep"
                    )
                stack.append([tag, [], length])
                continue
            value = _build(tag, [], check)
        else:
            value = _decode_scalar(tag, payload)
        while stack:  # attach the value; close every container it completes
            frame = stack[-1]
            frame[1].append(value)
            frame[2] -= 1
            if frame[2]:
                break
            stack.pop()
            if hashed_from == len(stack):
                hashed_from = None
            value = _build(frame[0], frame[1], check)
        else:
            result = value
    if result is _NOTHING:
        raise NotPlainData("malformed message: incomplete")
    return result


def _hashes_next(frame: list) -> bool:
    """Whether the next item of this open container is hashed: a set's or frozenset's
    element, a dict's or Counter's key."""
    return frame[0] in "SZ" or (frame[0] in "dC" and not len(frame[1]) % 2)


def _decode_scalar(tag, payload):
    if tag == "f":
        if type(payload) is float or (type(payload) is str and payload in ("inf", "-inf", "nan")):
            return float(payload)
        raise NotPlainData("malformed message: bad float")
    expected = _PAYLOAD_TYPES.get(tag)
    if expected is None or type(payload) is not expected:
        raise NotPlainData("malformed message: bad token")
    try:
        return _DECODE_SCALAR[tag](payload)
    except (ValueError, struct.error):
        raise NotPlainData("malformed message: bad number or bytes") from None


def _build(tag: str, items: list, check: Callable[[], None]):
    if tag == "l":
        return items
    if tag == "t":
        return tuple(items)
    if tag == MATCH:
        return matches.build(items)
    try:
        if tag in "dC":
            built: dict | set = {} if tag == "d" else Counter()  # (dict's own __setitem__)
            for n in range(0, len(items), 2):
                built[items[n]] = items[n + 1]
                if not n % (2 * INSERTS_PER_CHECK):
                    check()
            return built
        built = set()
        for n, item in enumerate(items):
            built.add(item)
            if not n % INSERTS_PER_CHECK:
                check()
    except (TypeError, RecursionError) as exc:  # unhashable, or too deep to hash
        raise NotPlainData(f"malformed message: {exc}") from None
    return built if tag == "S" else frozenset(built)
