"""The replayed verdict (`pass_at_1_replayed`): BigCodeBench's test run again, in a job with no
candidate code, on the record of what the program did (tasks/bigcodebench/README.md).

- the value codec carries what BigCodeBench's programs return (builtins, numpy, pandas,
  matplotlib figures, estimators, keys), run with BigCodeBench's libraries, and decodes nothing
  it does not list;
- the replay keeps its files inside its scratch folder and rebuilds exceptions from classes
  already loaded only.

Real Hard reference solutions through it: test_bigcodebench.py (`HARD_SUBSET`); the forged
passes it stops: test_bigcodebench_redteam_values.py."""

import json
import os
import subprocess
import sys

import pytest

from evalpack.hooks.bigcodebench import libs as bigcodebench_libs
from evalpack.hooks.bigcodebench.job.codec import decode, encode
from evalpack.hooks.bigcodebench.replay import run as bigcodebench_replay

requires_libs = pytest.mark.skipif(
    not bigcodebench_libs.installed(),
    reason=f"BigCodeBench's libraries are not installed in {bigcodebench_libs.folder()}",
)

# Run with BigCodeBench's libraries (pandas 2.0, matplotlib 3.7) first on the path: each value
# encoded, sent through JSON, decoded, and compared with what the tests of the benchmark use;
# prints the names of those that differ, then the count checked.
ROUND_TRIP = r"""
import array, collections, datetime, decimal, json, sys, zoneinfo
sys.path.insert(0, sys.argv[1])
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt, numpy as np, pandas as pd, pytz, rsa, seaborn as sns
from sklearn.linear_model import LinearRegression
from evalpack.hooks.bigcodebench.job.codec import decode, encode

def again(value):
    return decode(json.loads(json.dumps(encode(value))))

def same(a, b):
    if isinstance(a, pd.DataFrame):
        pd.testing.assert_frame_equal(a, b, check_freq=True)
    elif isinstance(a, pd.Series):
        pd.testing.assert_series_equal(a, b, check_freq=True)
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert all(x == y or x is y for x, y in zip(a.ravel().tolist(), b.ravel().tolist()))
    else:
        assert type(a) is type(b) and (a == b or a is b), (a, b)
        if isinstance(a, datetime.datetime) and a.tzinfo:
            assert a.utcoffset() == b.utcoffset() and str(a.tzinfo) == str(b.tzinfo)

VALUES = {
    "scalars": [None, True, 3, 2**20000, 1.5, float("-inf"), "é", b"\0\xff", 1 + 2j],
    "containers": [[1, (2, 3)], {4}, frozenset({5}), {"a": [1], (1, 2): None}, range(1, 9, 2)],
    "np.nan, the same object": {"max": np.nan},
    "times": [datetime.datetime(2024, 3, 1, tzinfo=datetime.timezone.utc), datetime.date(2020, 1, 2),
              datetime.time(3, 4, 5), datetime.timedelta(days=2, seconds=3)],
    "pytz": pytz.timezone("America/New_York").localize(datetime.datetime(2024, 7, 1, 9)),
    "zoneinfo": datetime.datetime(2024, 7, 1, 9, tzinfo=zoneinfo.ZoneInfo("Europe/Paris")),
    "collections": [decimal.Decimal("1.10"), collections.Counter("abca"),
                    collections.OrderedDict(a=1), collections.deque([1, 2], 5),
                    collections.defaultdict(list, {"k": [1]})],
    "arrays": np.arange(6).reshape(2, 3),
    "strings": np.array(["a", "bc"]),
    "objects": np.array([1, "a", None, [1, 2]], dtype=object),
    "datetime64": np.array(["2020-01-01"], dtype="M8[D]"),
    "numpy scalar": np.float64(2.5),
    "frame": pd.DataFrame({"a": [1, 2], "b": ["x", "y"], "c": [1.5, None]}, index=["r", "s"]),
    "zones and categories": pd.DataFrame({
        "d": pd.to_datetime(["2020-01-01", "2020-02-01"]).tz_localize("UTC").tz_convert("US/Eastern"),
        "k": pd.Categorical(["a", "b"])}),
    "dated series": pd.Series([1, 2, 3], name="n", index=pd.date_range("2020-01-01", periods=3)),
    "multi-index": pd.DataFrame([[1, 2]], columns=pd.MultiIndex.from_tuples([("a", "x"), ("a", "y")])),
    "empty frame": pd.DataFrame(columns=["a", "b"]),
    "value counts": pd.Series(["a", "b", "a"]).value_counts(),
    "timestamp": pd.Timestamp("2020-01-01 05:00", tz="Asia/Tokyo"),
    "array.array": array.array("d", [1.5, 2.5]),
}
def kept(value):
    try:
        same(value, again(value))
        return True
    except Exception:
        return False

bad = [name for name, value in VALUES.items() if not kept(value)]

fig, ax = plt.subplots()
ax.bar(["a", "b"], [1, 2]); ax.plot([1, 2], [3, 4], "r--", label="l"); ax.set_title("T")
ax.legend(); ax.scatter([1, 2], [2, 3]); fig.suptitle("S")
fig2, ax2 = again((fig, ax))
checks = {
    "axes in its figure": ax2.figure is fig2 and fig2 is plt.gcf(),
    "titles": (ax2.get_title(), fig2._suptitle.get_text()) == ("T", "S"),
    "bars": [p.get_height() for p in ax2.patches] == [1, 2] and len(ax2.containers) == 1,
    "lines": ax2.lines[0].get_ydata().tolist() == [3, 4] and ax2.lines[0].get_color() == "r",
    "legend": [t.get_text() for t in ax2.get_legend().get_texts()] == ["l"],
    "tick labels": [t.get_text() for t in ax2.get_xticklabels()] == ["a", "b"],
    "scatter": ax2.collections[0].get_offsets().tolist() == [[1, 2], [2, 3]],
    "children": len(ax2.get_children()) == len(ax.get_children()),
}
_, heat = plt.subplots()
sns.heatmap(np.arange(6).reshape(2, 3), ax=heat, annot=True)
heat2 = again(heat)
checks["heatmap"] = len(heat2.figure.axes) == 2 and len(heat2.texts) == 6
bars = plt.subplots()[1].bar(["a", "b"], [3, 4])
checks["bar container"] = [p.get_height() for p in again(bars)] == [3, 4]
model = LinearRegression().fit(np.arange(6).reshape(3, 2), [1, 2, 3])
model2 = again(model)
checks["estimator"] = type(model2) is LinearRegression and np.allclose(
    model2.predict([[1, 1]]), model.predict([[1, 1]]))
public, _ = rsa.newkeys(128)
checks["rsa key"] = again(public) == public
bad += [name for name, ok in checks.items() if not ok]
print(json.dumps([bad, len(VALUES) + len(checks)]))
"""


@requires_libs
def test_codec_carries_what_bigcodebench_programs_return():
    done = subprocess.run(
        [sys.executable, "-c", ROUND_TRIP, str(bigcodebench_libs.folder())],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "MPLBACKEND": "Agg"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    bad, checked = json.loads(done.stdout.strip().splitlines()[-1])
    assert bad == [] and checked == 32


@pytest.mark.parametrize(
    "data",
    [
        ["os.system", "ls"],  # a tag is a name this codec lists, never a callable's
        ["subprocess.Popen", ["list", ["ls"]]],
        ["defaultdict", "eval", []],  # factories: builtin types only, by name
        ["list"],
        {"calls": []},  # a JSON object is never a value
        ["ndarray", "O", [2], [1]],  # a shape that does not hold the items
        ["ndarray", "<i8", [1], "not base64!"],
        ["FigureRef", 0],  # a figure referred to before it was described
        ["datetime", "2020-01-01", 0, ["importlib", "os"], None],  # time zones: three kinds
        ["estimator", "subprocess", "Popen", ["dict", []]],  # scikit-learn's estimators only
        ["ref", 0, ""],  # a reference to one of the test's objects where there is none
    ],
)
def test_decoding_builds_only_the_types_it_lists(data):
    with pytest.raises(ValueError):
        decode(data)


def test_decoding_is_bounded_in_depth():
    deep = 1
    for _ in range(1000):
        deep = ["list", [deep]]
    with pytest.raises(ValueError, match="too deep"):
        decode(deep)
    assert decode(encode([[[1]], (2.5, None), {"k": b"v"}])) == [[[1]], (2.5, None), {"k": b"v"}]


def test_replayed_files_stay_in_the_scratch_folder(tmp_path):
    (tmp_path / "work").mkdir()
    (tmp_path / "gone.txt").write_text("the test's, before the call")
    bigcodebench_replay._sync_tree(str(tmp_path), [["work/out.csv", b"a,b\n"]], ["work"])
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["out.csv", "work"]
    assert (tmp_path / "work" / "out.csv").read_bytes() == b"a,b\n"
    for outside in (["../escape", b""], ["/etc/passwd", b""], ["work/../../x", b""]):
        with pytest.raises(ValueError, match="outside the scratch folder"):
            bigcodebench_replay._sync_tree(str(tmp_path), [outside], [])
    assert not (tmp_path.parent / "escape").exists()


def test_exceptions_are_rebuilt_from_loaded_classes_only():
    args = encode(["bad value"])
    own = [["__test__", "MyError"], ["builtins", "ValueError"], ["builtins", "Exception"]]
    rebuilt = bigcodebench_replay._exception(own, args)
    assert type(rebuilt) is ValueError and rebuilt.args == ("bad value",)
    # a module the process has not loaded is not imported, and a non-exception is not called
    never = [["antigravity", "Fly"], ["os", "system"], ["builtins", "BaseException"]]
    assert type(bigcodebench_replay._exception(never, args)) is BaseException
    assert "antigravity" not in sys.modules
