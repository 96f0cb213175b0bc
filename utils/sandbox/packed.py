"""Long lists packed for the wire (`protocol`): floats and small integers as IEEE doubles in
the binary section, integers alone as 64-bit integers there, other JSON-exact scalars as one
JSON array; and the binary section itself. Imported by both sides; imports nothing of either.
"""

from __future__ import annotations

import math
from array import array

SAFE_INT = 2**53  # smaller integers travel as JSON numbers, larger ones in hexadecimal
PACK_FROM = 16  # lists at least this long are packed where they can be (`pack`)
PACKED_JSON, PACKED_NUMBERS, PACKED_INTS = "lj", "ld", "lq"
# Scalars a JSON array carries with their exact type: json writes 2.0 as "2.0" and 2 as "2",
# true as "true", infinities by name, and reads each back as the same type and value (not a
# NaN's sign or payload: NaNs travel otherwise).
JSON_EXACT = frozenset({type(None), bool, int, float, str})


class NotPlainData(TypeError):
    """A value outside the plain-data types, or a malformed or oversized message."""


def pack(items: list, blobs: list[bytes]) -> tuple[str, object, int] | None:
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
    if not kinds <= JSON_EXACT:
        return None
    if kinds == {int}:
        try:
            blobs.append(array("q", items).tobytes())
        except OverflowError:  # beyond 64 bits: token by token, in hexadecimal
            return None
        return PACKED_INTS, len(blobs[-1]), len(blobs[-1])
    if int in kinds and not _small([items[n] for n in _positions(types, int)]):
        return None
    if float in kinds and any(map(math.isnan, (x for x in items if type(x) is float))):
        return None  # a NaN: token by token, bit for bit
    text = sum(len(x) for x in items if type(x) is str) if str in kinds else 0
    return PACKED_JSON, items, text


def _small(ints: list[int]) -> bool:
    return -SAFE_INT < min(ints) <= max(ints) < SAFE_INT


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


class Binary:
    """The binary section of a message, taken front to back."""

    def __init__(self, view: memoryview):
        self.view, self.taken = view, 0

    def take(self, size) -> memoryview:
        if type(size) is not int or not 0 <= size <= len(self.view) - self.taken:
            raise NotPlainData("malformed message: bad binary length")
        self.taken += size
        return self.view[self.taken - size : self.taken]


def _unpack_json(payload, binary: Binary) -> list:
    if type(payload) is not list or not set(map(type, payload)) <= JSON_EXACT:
        raise NotPlainData("malformed message: bad packed list")
    return payload


def _unpack_numbers(payload, binary: Binary) -> list:
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


def _unpack_ints(size, binary: Binary) -> list:
    """64-bit integers (a length not a multiple of 8 raises ValueError: malformed)."""
    ints = array("q")
    ints.frombytes(binary.take(size))
    return ints.tolist()


UNPACK = {PACKED_JSON: _unpack_json, PACKED_NUMBERS: _unpack_numbers, PACKED_INTS: _unpack_ints}
