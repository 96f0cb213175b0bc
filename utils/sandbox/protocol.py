"""The wire format between the harness and a candidate: plain data only, as a flat token list.

Plain data: None, bool, int (any size), float (inf and nan included), str, bytes, and lists,
tuples, sets, frozensets and dicts of those; exact types (a subclass, e.g. an int with a rigged
`__eq__`, is refused); a numpy scalar travels as the Python value it holds. A message is a
4-byte length and a body (`to_wire`): a 4-byte length, a JSON array of (tag, payload) pairs in
prefix order (a container is its tag and its length, followed by its items), then a binary
section. The JSON has no nesting, so neither side recurses: a value of any depth crosses, and
the only RecursionError a test sees is the one plain Python would raise comparing it. Big
integers travel in hexadecimal (linear time both ways, exempt from Python's 4300-digit limit
on decimal conversion). Long strings travel as UTF-8 in the binary section (HumanEval/15
returns 147 MB of them: JSON would escape and scan every character), long bytes as they are. A long list is packed
where it can be, so that C code handles it: integers alone (HumanEval/100 returns a million) as
64-bit integers in the binary section; floats and small integers (HumanEval/130 returns a
million of them mixed) as their IEEE doubles there (bit for bit) with the positions of the
integers; other scalars that JSON carries exactly (None, bool, small int,
float, str) as one JSON array. A short value of those scalars and of lists and str-keyed dicts
of them (most answers: `{"result": True}`) is a body of its own, plain JSON (`SHORT`), which the
C codec reads without the token loop.

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
import sys
from array import array
from collections.abc import Callable

from .limits import MAX_MESSAGE, MAX_VALUES

CHECK_EVERY = 4096  # values decoded between two calls of `check`
INSERTS_PER_CHECK = 16  # set / dict insertions between two calls of `check`
SAFE_INT = 2**53  # smaller integers travel as JSON numbers, larger ones in hexadecimal
_SCALARS = {type(None): "N", bool: "B", str: "s"}
_CONTAINERS = {list: "l", tuple: "t", set: "S", frozenset: "Z", dict: "d"}
_NOTHING = object()
# Hashing a tuple recurses in C with no depth check: a tuple a million deep crashes the process
# that hashes it. Inside a set, frozenset or dict (whose building hashes), nesting is capped.
MAX_HASHED_DEPTH = 10_000
PACK_FROM = 16  # lists at least this long are packed where they can be (`_pack`)
# Scalars a JSON array carries with their exact type: json writes 2.0 as "2.0" and 2 as "2",
# true as "true", NaN and infinities by name, and reads each back as the same type and value.
_JSON_EXACT = frozenset({type(None), bool, int, float, str})
_NUMBERS = frozenset({int, float})
_BUILTIN_SCALARS = _JSON_EXACT | {bytes}
PACKED_JSON, PACKED_NUMBERS, PACKED_INTS = "lj", "ld", "lq"
LONG_FROM = 4096  # strings and bytes at least this long travel in the binary section
LONG_STRING, LONG_BYTES = "x", "y"
SHORT, SHORT_MAX = b"J", 4096  # a body that is plain JSON starts with SHORT; at most SHORT_MAX
#                                bytes (no token count bounds it: 4 KiB builds little)
_ENCODER = json.JSONEncoder(separators=(",", ":"))  # built once: json.dumps would per call
_DECODER = json.JSONDecoder()


class NotPlainData(TypeError):
    """A value outside the plain-data types, or a malformed or oversized message."""


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
            packed = _pack(item, blobs) if kind is list and len(item) >= PACK_FROM else None
            if packed:
                size += packed[2]
                tokens += packed[:2]
                continue
            count -= len(item)  # counted as they come off the stack
            tokens += (_CONTAINERS[kind], len(item))
            if kind is dict:
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
        if not numpy_scalars and kind not in _BUILTIN_SCALARS:
            raise NotPlainData(f"{kind.__name__} is not a built-in scalar")
        tag, payload = _scalar_token(item, kind)
        if tag in "sbI":
            size += len(payload)
        tokens += (tag, payload)
    if size > MAX_MESSAGE:
        raise NotPlainData(f"message exceeds {MAX_MESSAGE} bytes")
    text = _ENCODER.encode(tokens).encode()
    return b"".join([len(text).to_bytes(4, "big"), text, *blobs])


def _json_exact(value, depth: int) -> bool:
    """Whether JSON carries `value` exactly: JSON-exact scalars (small integers), and lists and
    str-keyed dicts of them at most `depth` deep and 16 items long (checking more costs more
    than the token loop)."""
    kind = type(value)
    if kind is str:  # a long one travels in the binary section: not worth encoding as JSON
        return len(value) < LONG_FROM
    if kind in _JSON_EXACT:
        return kind is not int or -SAFE_INT < value < SAFE_INT
    if not depth or kind not in (list, dict) or len(value) > PACK_FROM:
        return False
    if kind is dict:
        return (all(type(key) is str for key in value)
                and all(_json_exact(item, depth - 1) for item in value.values()))
    return all(_json_exact(item, depth - 1) for item in value)


def _pack(items: list, blobs: list[bytes]) -> tuple[str, object, int] | None:
    """(tag, payload, bytes of text in it) for a list of scalars that packs, else None:
    floats and small integers as doubles (added to `blobs`) with the integers' positions;
    integers alone as 64-bit integers (added to `blobs`); other JSON-exact scalars as one JSON
    array. Integers among other types must be small: exact as doubles and as JSON numbers."""
    types = list(map(type, items))
    floats = types.count(float)  # quick where floats are most (a match is an identity check)
    others = len(types) - floats
    if floats:
        integers = _positions(types, int, others)
        if len(integers) == others:  # floats and integers only
            if integers and not _small([items[n] for n in integers]):
                return None
            blobs.append(array("d", items).tobytes())
            return PACKED_NUMBERS, [len(blobs[-1]), integers], len(blobs[-1])
    kinds = set(types)
    if not kinds <= _JSON_EXACT:
        return None
    if kinds == {int}:
        try:
            blobs.append(array("q", items).tobytes())
        except OverflowError:  # beyond 64 bits: token by token, in hexadecimal
            return None
        return PACKED_INTS, len(blobs[-1]), len(blobs[-1])
    if int in kinds and not _small([items[n] for n in _positions(types, int)]):
        return None
    text = sum(len(x) for x in items if type(x) is str) if str in kinds else 0
    return PACKED_JSON, items, text


def _small(ints: list[int]) -> bool:
    return -SAFE_INT < min(ints) <= max(ints) < SAFE_INT


def _scalar_token(item, kind) -> tuple[str, object]:
    if kind in _SCALARS:
        return _SCALARS[kind], item
    if kind is int:
        return ("i", item) if -SAFE_INT < item < SAFE_INT else ("I", hex(item))
    if kind is float:
        return "f", item if math.isfinite(item) else repr(item)
    if kind is bytes:
        return "b", item.hex()
    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(item, numpy.generic):
        return _numpy_scalar(item)
    raise NotPlainData(f"{kind.__name__} is not plain data")


def _numpy_scalar(item) -> tuple[str, object]:
    """A numpy scalar (np.int64, np.float32, np.bool_, np.str_ ...) travels as the Python
    value it holds, which the test compares as it would the numpy value; arrays stay
    non-plain."""
    value = item.item()
    if type(value) not in (bool, int, float, str, bytes):  # e.g. a subclass's rigged item()
        raise NotPlainData(f"{type(item).__name__} is not plain data")
    return _scalar_token(value, type(value))


_PAYLOAD_TYPES = {"N": type(None), "B": bool, "s": str, "i": int, "I": str, "b": str}
_DECODE_SCALAR = {"N": lambda p: None, "B": bool, "s": str, "i": int,
                  "I": lambda p: int(p, 16), "b": bytes.fromhex}


def _positions(types: list, kind: type, most: int | None = None) -> list[int]:
    """Where `kind` is in `types`, up to `most` places (`list.index` scans at C speed between
    two of them)."""
    found, at = [], -1
    try:
        while most is None or len(found) < most:
            at = types.index(kind, at + 1)
            found.append(at)
    except ValueError:
        pass
    return found


class _Binary:
    """The binary section of a message, taken front to back."""

    def __init__(self, view: memoryview):
        self.view, self.taken = view, 0

    def take(self, size) -> memoryview:
        if type(size) is not int or not 0 <= size <= len(self.view) - self.taken:
            raise NotPlainData("malformed message: bad binary length")
        self.taken += size
        return self.view[self.taken - size:self.taken]


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
            text, binary = body, _Binary(memoryview(b""))
        else:
            view = memoryview(body)
            size = int.from_bytes(view[:4], "big")
            text, binary = str(view[4:4 + size], "ascii"), _Binary(view[4 + size:])
            if len(view) < 4 + size:
                raise NotPlainData("malformed message: truncated")
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


def _decode_tokens(tokens, check: Callable[[], None], binary: _Binary):
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
        elif tag in _UNPACK:
            value = _UNPACK[tag](payload, binary)
            count += len(value)
            if count > MAX_VALUES:
                raise NotPlainData(f"more than {MAX_VALUES} values")
            check()
        elif tag in ("l", "t", "S", "Z", "d"):
            length = (payload * 2 if tag == "d" else payload) if type(payload) is int else -1
            if not 0 <= length <= (len(tokens) - index) // 2:
                raise NotPlainData("malformed message: bad container length")
            if length:
                if hashed_from is None and stack and _hashes_next(stack[-1]):
                    hashed_from = len(stack)
                if hashed_from is not None and len(stack) - hashed_from >= MAX_HASHED_DEPTH:
                    raise NotPlainData(f"a set element or dict key nested more than "
                                       f"{MAX_HASHED_DEPTH} deep")
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
    element, a dict's key."""
    return frame[0] in "SZ" or (frame[0] == "d" and not len(frame[1]) % 2)


def _unpack_json(payload, binary: _Binary) -> list:
    if type(payload) is not list or not set(map(type, payload)) <= _JSON_EXACT:
        raise NotPlainData("malformed message: bad packed list")
    return payload


def _unpack_numbers(payload, binary: _Binary) -> list:
    """The floats back bit for bit; the integers from the positions given, each a whole
    double of the small range (a length not a multiple of 8 raises ValueError: malformed)."""
    size, integers = payload
    doubles = array("d")
    doubles.frombytes(binary.take(size))
    values = doubles.tolist()
    previous = -1
    for n in integers:
        if type(n) is not int or not previous < n < len(values):
            raise NotPlainData("malformed message: bad packed numbers")
        if not (values[n].is_integer() and -SAFE_INT < values[n] < SAFE_INT):
            raise NotPlainData("malformed message: bad packed integer")
        values[n], previous = int(values[n]), n
    return values


def _unpack_ints(size, binary: _Binary) -> list:
    """64-bit integers (a length not a multiple of 8 raises ValueError: malformed)."""
    ints = array("q")
    ints.frombytes(binary.take(size))
    return ints.tolist()


_UNPACK = {PACKED_JSON: _unpack_json, PACKED_NUMBERS: _unpack_numbers, PACKED_INTS: _unpack_ints}


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
    except ValueError:
        raise NotPlainData("malformed message: bad number or bytes") from None


def _build(tag: str, items: list, check: Callable[[], None]):
    if tag == "l":
        return items
    if tag == "t":
        return tuple(items)
    try:
        if tag == "d":
            built: dict | set = {}
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
