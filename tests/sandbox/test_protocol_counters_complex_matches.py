"""Three standard types beyond JSON-like data cross the sandbox boundary: `collections.Counter`
and `complex` exactly, a `re.Match` as the data it holds, arriving as a stand-in that answers
as the match does (its pattern never runs on the receiving side). Forged tokens of each are
refused as non-plain data, and a candidate's subclass of them never crosses."""

import math
import re
import struct
from collections import Counter

import numpy as np
import pytest

from evalpack.execution import Job, NotPlainData, from_wire, run_jobs, to_wire
from evalpack.sandbox.matches import Match


def bits(value: complex) -> bytes:
    return struct.pack(">dd", value.real, value.imag)


@pytest.mark.parametrize(
    "value",
    [
        Counter("abracadabra"),
        Counter({(1, "a"): 2, 3.5: -1, None: 0, "x": 2.5}),
        {"counts": Counter({1: 1}), "empty": Counter()},
        (1j, -2.5 + 0j, complex(1e308, -5e-324)),
        [1 + 2j] * 20,  # a long list of them: token by token
        {1j: Counter({2j: 3})},
    ],
    ids=["counter", "odd keys", "nested", "complex", "long list", "as keys"],
)
def test_counters_and_complex_numbers_round_trip_exactly(value):
    decoded = from_wire(to_wire(value))
    assert decoded == value and repr(decoded) == repr(value)
    assert type(decoded) is type(value)


def test_complex_numbers_cross_bit_for_bit_and_counters_keep_their_order():
    for value in [complex(-0.0, -0.0), complex(float("inf"), float("-inf"))]:
        assert bits(from_wire(to_wire(value))) == bits(value)
    signed_nan = struct.unpack(">d", bytes.fromhex("fff8000000000123"))[0]
    assert bits(from_wire(to_wire(complex(1.0, signed_nan)))) == bits(complex(1.0, signed_nan))
    assert math.isnan(from_wire(to_wire(complex(signed_nan, 0))).real)
    counts = Counter("zyxzz")
    assert list(from_wire(to_wire(counts)).items()) == [("z", 3), ("y", 1), ("x", 1)]
    assert from_wire(to_wire(counts)).most_common(1) == [("z", 3)]
    assert type(from_wire(to_wire(np.complex128(1 - 1j)))) is complex  # numpy's, by value


def test_subclasses_of_counter_and_complex_are_refused():
    class Rigged(Counter):
        def __eq__(self, other):
            return True

    class Phase(complex):
        pass

    for value in [Rigged("a"), Phase(1j), [Counter(a=Rigged())]]:
        with pytest.raises(NotPlainData):
            to_wire(value)


MATCHES = [
    re.search(r"(?P<first>\w)(\d)?(?P<rest>\w*)", "  ab1 cd"),
    re.search(r"(a)|(?P<b>b)", "xb"),  # a group that did not take part, a named last group
    re.match(rb"(\x00)(x)?", b"\x00\xffy"),  # bytes
    re.compile(r"").search("abc", 2, 3),  # empty, with pos and endpos
    re.search("^[aeiouAEIOU][A-Za-z0-9_]*", "annie" * 30),  # MBPP+ 737's, repr cut short
]


@pytest.mark.parametrize("match", MATCHES, ids=range(len(MATCHES)))
def test_a_match_arrives_as_a_stand_in_that_answers_as_the_match(match):
    standin = from_wire(to_wire({"result": match}))["result"]
    assert type(standin) is Match
    groups = range(len(match.regs))
    names = list(match.re.groupindex)
    for read in [
        lambda m: (m.string, m.pos, m.endpos, m.lastindex, m.lastgroup, m.regs, repr(m)),
        lambda m: (m.group(), m.group(*groups), m.groups(), m.groups("-"), m.groupdict("-")),
        lambda m: [(m[g], m.span(g), m.start(g), m.end(g), m.group(np.int64(g))) for g in groups],
        lambda m: [(m[name], m.span(name)) for name in names],
    ]:
        assert read(standin) == read(match)
    for missing in [len(match.regs), -1, "nope", 1.0]:
        with pytest.raises(IndexError, match="no such group"):
            match.group(missing)
        with pytest.raises(IndexError, match="no such group"):
            standin.group(missing)
    # like a re.Match it equals only itself (no __eq__), is truthy and is not None
    assert standin == standin  # noqa: PLR0124 (identity, as re.Match's)
    assert standin != match and standin != from_wire(to_wire(match))
    assert bool(standin) and standin is not None and not isinstance(standin, bool)
    again = from_wire(to_wire(standin))  # a stand-in crosses as the match did
    assert type(again) is Match and repr(again) == repr(match) and again.regs == match.regs


def token(body: str) -> str:
    return f'["d",1,"s","result",{body}]'


GOOD_MATCH = '"M",6,"s","ab","i",0,"i",2,"N",null,"t",2,"t",2,"i",0,"i",2,"t",2,"i",-1,"i",-1,"d",0'


@pytest.mark.parametrize(
    "body",
    [
        '"c","00"',  # not two doubles
        '"c","' + "z" * 32 + '"',
        '"c",' + "1" * 32,  # a number, not hex digits
        '"c",[1.0,2.0]',
        '"C",1,"l",0,"i",1',  # an unhashable key
        '"C",true,"i",1,"i",1',  # a length that is no integer
        '"C",-1',
        '"M",5,"s","ab","i",0,"i",2,"N",null,"t",0',  # too few fields
        '"M",0',
        GOOD_MATCH.replace('"s","ab"', '"i",7'),  # the string is no string
        GOOD_MATCH.replace('"s","ab"', '"l",0'),
        GOOD_MATCH.replace('"i",0,"i",2,"N"', '"i",0,"i",3,"N"'),  # endpos past the string
        GOOD_MATCH.replace('"i",0,"i",2,"N"', '"i",-1,"i",2,"N"'),  # pos before it
        GOOD_MATCH.replace('"N",null', '"i",2'),  # lastindex names no group
        GOOD_MATCH.replace('"N",null', '"B",true'),
        GOOD_MATCH.replace('"t",2,"i",0,"i",2,"t"', '"t",2,"i",0,"i",9,"t"'),  # span past it
        GOOD_MATCH.replace('"t",2,"i",0,"i",2,"t"', '"t",2,"i",-1,"i",-1,"t"'),  # no match
        GOOD_MATCH.replace('"t",2,"i",-1,"i",-1', '"t",2,"f",-1.0,"f",-1.0'),  # not integers
        GOOD_MATCH.replace('"t",2,"i",-1,"i",-1', '"t",2,"B",true,"B",true'),
        GOOD_MATCH.replace('"t",2,"i",-1,"i",-1', '"t",3,"i",-1,"i",-1,"i",0'),
        GOOD_MATCH.replace('"t",2,"t",2', '"l",2,"t",2'),  # spans in a list
        GOOD_MATCH.replace('"t",2,"t",2,"i",0,"i",2,"t",2,"i",-1,"i",-1', '"t",0'),  # none
        GOOD_MATCH.replace('"d",0', '"d",1,"s","g","i",2'),  # a name for no group
        GOOD_MATCH.replace('"d",0', '"d",1,"i",1,"i",1'),  # a name that is no string
        GOOD_MATCH.replace('"d",0', '"l",0'),
    ],
)
def test_forged_tokens_of_counters_complex_numbers_and_matches_are_refused(body):
    with pytest.raises(NotPlainData):
        from_wire(token(body))


def test_the_forged_tokens_refused_differ_from_good_ones_in_the_forged_part_only():
    good = from_wire(token(GOOD_MATCH))["result"]
    assert (good.group(), good.groups(), good.lastgroup) == ("ab", (None,), None)
    assert from_wire(token('"C",1,"t",1,"i",1,"i",2')) == {"result": Counter({(1,): 2})}
    assert from_wire(token('"c","' + bits(2 - 1j).hex() + '"')) == {"result": 2 - 1j}


def test_a_candidate_returning_them_is_judged_on_the_values():
    program = (
        "import re\nfrom collections import Counter\n"
        "def f(kind, x):\n"
        "    if kind == 'counter':\n        return Counter(x)\n"
        "    if kind == 'polar':\n        return complex(x, -x)\n"
        "    return re.search('b+', x)\n"
    )
    tests = [
        "assert f('counter', 'aab') == Counter(a=2, b=1)\n",
        "assert f('counter', 'aab') == {'a': 2, 'b': 1}\n",  # a Counter equals its dict
        "assert f('counter', 'aab') == Counter(a=2)\n",
        "assert f('polar', 1.5) == 1.5 - 1.5j\n",
        "assert f('polar', 1.5) == 1.5\n",
        "m = f('match', 'abbc')\nassert m and m.group() == 'bb' and m.span() == (1, 3)\n",
        "assert f('match', 'ac') is None\n",
        "assert f('match', 'abc') == f('match', 'abc')\n",  # two matches are never equal
    ]
    prelude = "from collections import Counter\n"
    verdicts = run_jobs([Job(program, prelude + test, "f", timeout=5.0) for test in tests])
    assert [v.outcome for v in verdicts] == [
        "passed",
        "passed",
        "failed",
        "passed",
        "failed",
        "passed",
        "passed",
        "failed",
    ], [v.reason for v in verdicts]


def test_a_candidates_counter_subclass_or_match_lookalike_does_not_cross():
    program = (
        "from collections import Counter\n"
        "class Rigged(Counter):\n    def __eq__(self, other):\n        return True\n"
        "class Match:\n    pass\n"
        "def f(kind):\n    return Rigged() if kind else Match()\n"
    )
    tests = ["assert f(1) == {}\n", "assert f(0) is not None\n"]
    verdicts = run_jobs([Job(program, test, "f", timeout=5.0) for test in tests])
    assert [(v.outcome, "not plain data" in v.reason) for v in verdicts] == [("error", True)] * 2
