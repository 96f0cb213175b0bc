"""matplotlib figures in BigCodeBench's replay encoding (`job.codec` calls these).

A figure is carried as a description (its size, suptitle and axes; of each axes its position,
titles, labels, limits, scales, ticks and tick labels, legend, and its lines, patches,
collections, texts and images with the properties tests read) and rebuilt through
matplotlib's public API, as a pyplot figure. An artist of a kind not listed here makes the
value unreplayable (`encoder.fail`), never dropped: what the test may look at is either carried
or refused. An `Axes` value is its figure plus its place in `figure.axes`; a figure met twice
in one encoded value (an axes and its figure, two axes of one figure) is rebuilt once.
"""

import contextlib
import sys

PATCHES = ("Rectangle", "Wedge", "Polygon", "Circle", "Ellipse", "PathPatch")
COLLECTIONS = ("PathCollection", "QuadMesh", "PolyCollection", "LineCollection")


def encoder(value):
    """The encoder for a matplotlib Figure or rectilinear/polar Axes, or None."""
    name = type(value).__name__
    module = type(value).__module__
    if (module, name) == ("matplotlib.figure", "Figure"):
        return _figure
    if (module, name) in (
        ("matplotlib.axes._axes", "Axes"),
        ("matplotlib.projections.polar", "PolarAxes"),
    ):
        return _axes_value
    if (module, name) == ("matplotlib.container", "BarContainer"):
        return _bars_value
    return None


def _axes_value(e, ax, d):
    return ["Axes", _figure(e, ax.figure, d), ax.figure.axes.index(ax)]


def _bars_value(e, container, d):
    """A bar container (what `ax.bar` returns): its axes, and its place among their bars."""
    ax = container.patches[0].axes if len(container.patches) else None
    if ax is None or ax.figure is None:
        e.fail("a bar container outside any axes")
    bars = [c for c in ax.containers if type(c).__name__ == "BarContainer"]
    place = next((i for i, c in enumerate(bars) if c is container), None)
    if place is None:
        e.fail("a bar container its axes do not hold")
    return ["BarContainer", _axes_value(e, ax, d), place]


def _figure(e, fig, d):
    known = e.figures.get(id(fig))
    if known is not None:
        return ["FigureRef", known[0]]
    number = len(e.figures)
    e.figures[id(fig)] = (number, fig)  # (the figure kept, so that its id is not reused)
    suptitle = fig._suptitle.get_text() if fig._suptitle is not None else None
    axes = [e.encode(_axes(e, ax), d) for ax in fig.axes]
    size = [float(x) for x in fig.get_size_inches()]
    return ["Figure", number, size, float(fig.dpi), suptitle, axes]


def _axes(e, ax):
    if ax.name not in ("rectilinear", "polar"):
        e.fail(f"matplotlib axes of the projection {ax.name!r}")
    legend = ax.get_legend()
    return {
        "kind": ax.name,
        "bounds": list(ax.get_position(original=True).bounds),
        "titles": [ax.get_title(loc) for loc in ("left", "center", "right")],
        "labels": [ax.get_xlabel(), ax.get_ylabel()],
        "limits": [list(ax.get_xlim()), list(ax.get_ylim())],
        "scales": [ax.get_xscale(), ax.get_yscale()],
        "aspect": ax.get_aspect(),
        "grid": [any(line.get_visible() for line in axis.get_gridlines())
                 for axis in (ax.xaxis, ax.yaxis)],
        "polar": [ax.get_rlabel_position(), ax.get_theta_offset(), ax.get_theta_direction()]
        if ax.name == "polar" else None,
        "ticks": [_ticks(ax.xaxis), _ticks(ax.yaxis)],
        "lines": [_line(line) for line in ax.lines],
        "patches": [_patch(e, patch) for patch in ax.patches],
        "bars": [_bar(ax, c) for c in ax.containers if type(c).__name__ == "BarContainer"],
        "collections": [_collection(e, c) for c in ax.collections],
        "texts": [_text(t) for t in ax.texts],
        "images": [_image(e, image) for image in ax.images],
        "legend": None if legend is None else [
            [t.get_text() for t in legend.get_texts()], legend.get_title().get_text()
        ],
    }  # fmt: skip


def _ticks(axis):
    return [list(axis.get_ticklocs()), [t.get_text() for t in axis.get_ticklabels()]]


def _style(artist):
    return {"label": artist.get_label(), "alpha": artist.get_alpha(), "zorder": artist.zorder}


def _line(line):
    return {
        "x": line.get_xdata(),
        "y": line.get_ydata(),
        "plotted": None if _numeric(line.get_xdata()) else _plain(line.get_xdata(orig=False)),
        "color": _color(line.get_color()),
        "linestyle": line.get_linestyle(),
        "linewidth": line.get_linewidth(),
        "marker": line.get_marker() if isinstance(line.get_marker(), str) else None,
        **_style(line),
    }


def _numeric(values):
    import numpy as np

    return np.asarray(values).dtype.kind in "biuf"


def _color(color):
    return list(color) if isinstance(color, tuple) else color


def _patch(e, patch):
    kind = type(patch).__name__
    if kind not in PATCHES or type(patch).__module__ != "matplotlib.patches":
        e.fail(f"a matplotlib patch of type {kind}")
    shape = {
        "Rectangle": lambda p: [p.get_x(), p.get_y(), p.get_width(), p.get_height(), p.angle],
        "Wedge": lambda p: [list(p.center), p.r, p.theta1, p.theta2, p.width],
        "Polygon": lambda p: [p.get_xy(), p.get_closed()],
        "Circle": lambda p: [list(p.center), p.radius],
        "Ellipse": lambda p: [list(p.center), p.width, p.height, p.angle],
        "PathPatch": lambda p: [p.get_path().vertices, p.get_path().codes],
    }[kind](patch)
    colors = [list(patch.get_facecolor()), list(patch.get_edgecolor())]
    return {
        "kind": kind,
        "shape": shape,
        "colors": colors,
        "fill": patch.get_fill(),
        **_style(patch),
    }


def _bar(ax, container):
    patches = list(ax.patches)
    indices = [next((i for i, p in enumerate(patches) if p is bar), -1) for bar in container]
    return {"patches": indices, "label": container.get_label()}


def _plain(array):
    """Coordinates or colors as a plain numpy array (a mask there only hides points)."""
    import numpy as np

    return np.asarray(np.ma.getdata(array))


def _masked(array):
    """A (masked) array as [its data, its mask or None], both plain numpy arrays."""
    import numpy as np

    mask = np.ma.getmask(array)
    data = np.asarray(np.ma.getdata(array))
    return [data, None if mask is np.ma.nomask else np.asarray(mask)]


def _collection(e, c):
    kind = type(c).__name__
    if kind not in COLLECTIONS or not type(c).__module__.startswith("matplotlib."):
        e.fail(f"a matplotlib collection of type {kind}")
    shape = {
        "PathCollection": lambda: [_plain(c.get_offsets()), _plain(c.get_sizes())],
        "QuadMesh": lambda: [_plain(c.get_coordinates())],
        "PolyCollection": lambda: [[_plain(p.vertices).reshape(-1, 2) for p in c.get_paths()]],
        "LineCollection": lambda: [[_plain(s).reshape(-1, 2) for s in c.get_segments()]],
    }[kind]()
    array = c.get_array()
    colors = [_plain(c.get_facecolors()), _plain(c.get_edgecolors())]
    return {
        "kind": kind,
        "shape": shape,
        "array": None if array is None else _masked(array),
        "limits": None if array is None else list(c.get_clim()),
        "colors": colors,
        "cmap": c.get_cmap().name if array is not None else None,
        **_style(c),
    }


def _text(t):
    annotation = type(t).__name__ == "Annotation"
    return {
        "text": t.get_text(),
        "at": list(t.get_position()),
        "xy": list(t.xy) if annotation else None,
        "color": _color(t.get_color()),
        "fontsize": t.get_fontsize(),
        "ha": t.get_horizontalalignment(),
        "va": t.get_verticalalignment(),
    }


def _image(e, image):
    if type(image).__name__ != "AxesImage":
        e.fail(f"a matplotlib image of type {type(image).__name__}")
    return {"array": _masked(image.get_array()), "extent": list(image.get_extent()),
            "cmap": image.get_cmap().name, "limits": list(image.get_clim()),
            **_style(image)}  # fmt: skip


def decode_axes(args, item):
    figure, index = args
    return item(figure).axes[int(index)]


def decode_reference(args, item):
    if args[0] not in item.figures:
        raise ValueError("a figure referred to before it was described")
    return item.figures[args[0]]


def decode_figure(args, item):
    """A pyplot figure built from its description (`_figure`)."""
    import matplotlib.pyplot as plt

    number, size, dpi, suptitle, axes = args
    if "pandas" in sys.modules:  # pandas' units (dates, periods), as its plots register them
        sys.modules["pandas"].plotting.register_matplotlib_converters()
    fig = plt.figure(figsize=[float(x) for x in size], dpi=float(dpi))
    item.figures[number] = fig
    if suptitle is not None:
        fig.suptitle(suptitle)
    for description in axes:
        _build_axes(fig, item(description))
    return fig


def _build_axes(fig, d):
    import matplotlib.units as munits

    ax = fig.add_axes(d["bounds"], projection="polar" if d["kind"] == "polar" else None)
    for loc, title in zip(("left", "center", "right"), d["titles"]):
        if title:
            ax.set_title(title, loc=loc)
    ax.set_xlabel(d["labels"][0])
    ax.set_ylabel(d["labels"][1])
    for line in d["lines"]:
        x, y, plotted, style = line.pop("x"), line.pop("y"), line.pop("plotted"), _styled(line)
        try:
            ax.plot(x, y, **style)
        except (munits.ConversionError, TypeError, ValueError):  # units set up by a library
            ax.plot(plotted, y, **style)  # (pandas' periods): the numbers it plotted
    for patch in d["patches"]:
        ax.add_patch(_build_patch(patch))
    for bar in d["bars"]:
        _add_bars(ax, bar)
    for collection in d["collections"]:
        _add_collection(ax, collection)
    for text in d["texts"]:
        _add_text(ax, text)
    for image in d["images"]:
        shown = ax.imshow(
            _unmasked(image["array"]), extent=image["extent"], cmap=image["cmap"], **_common(image)
        )
        shown.set_clim(*image["limits"])
    if d["legend"] is not None:
        from matplotlib.lines import Line2D

        texts, title = d["legend"]
        ax.legend([Line2D([], []) for _ in texts], texts, title=title or None)
    ax.set_xscale(d["scales"][0])
    ax.set_yscale(d["scales"][1])
    ax.set_aspect(d["aspect"])
    for which, visible in zip("xy", d["grid"]):
        if visible:
            ax.grid(True, axis=which)
    if d["polar"] is not None:
        ax.set_rlabel_position(d["polar"][0])
        ax.set_theta_offset(d["polar"][1])
        ax.set_theta_direction(d["polar"][2])
    for axis, (locs, labels) in zip((ax.xaxis, ax.yaxis), d["ticks"]):
        # (an axis with units, e.g. pandas' periods, may refuse plain numbers: then left as
        # the plotted data made it)
        with contextlib.suppress(ValueError, TypeError, munits.ConversionError):
            axis.set_ticks(locs)
            axis.set_ticklabels(labels)
    with contextlib.suppress(ValueError, TypeError, munits.ConversionError):
        ax.set_xlim(*d["limits"][0])
        ax.set_ylim(*d["limits"][1])


def _common(d):
    return {"label": d["label"], "alpha": d["alpha"], "zorder": d["zorder"]}


def _styled(line):
    keys = ("color", "linestyle", "linewidth", "marker")
    return {**{k: line[k] for k in keys if line[k] is not None}, **_common(line)}


def _build_patch(d):
    from matplotlib import patches
    from matplotlib.path import Path

    kind, shape = d["kind"], d["shape"]
    if kind not in PATCHES:
        raise ValueError(f"unknown matplotlib patch {kind!r}")
    patch = {
        "Rectangle": lambda: patches.Rectangle(shape[:2], shape[2], shape[3], angle=shape[4]),
        "Wedge": lambda: patches.Wedge(shape[0], shape[1], shape[2], shape[3], width=shape[4]),
        "Polygon": lambda: patches.Polygon(shape[0], closed=shape[1]),
        "Circle": lambda: patches.Circle(shape[0], shape[1]),
        "Ellipse": lambda: patches.Ellipse(shape[0], shape[1], shape[2], angle=shape[3]),
        "PathPatch": lambda: patches.PathPatch(Path(shape[0], shape[1])),
    }[kind]()
    patch.set_facecolor(d["colors"][0])
    patch.set_edgecolor(d["colors"][1])
    patch.set_fill(d["fill"])
    patch.set(**_common(d))
    return patch


def _add_bars(ax, d):
    from matplotlib.container import BarContainer

    bars = list(ax.patches)
    if any(not 0 <= i < len(bars) for i in d["patches"]):
        raise ValueError("a bar container of patches the axes does not hold")
    ax.add_container(BarContainer([bars[i] for i in d["patches"]], label=d["label"]))


def _add_collection(ax, d):
    from matplotlib import collections

    kind, shape = d["kind"], d["shape"]
    if kind == "PathCollection":
        c = (
            ax.scatter(shape[0][:, 0], shape[0][:, 1], s=shape[1])
            if len(shape[0])
            else ax.scatter([], [])
        )
    elif kind in COLLECTIONS:
        c = getattr(collections, kind)(*shape)
        ax.add_collection(c)
    else:
        raise ValueError(f"unknown matplotlib collection {kind!r}")
    c.set_facecolor(d["colors"][0])
    c.set_edgecolor(d["colors"][1])
    if d["array"] is not None:
        c.set_array(_unmasked(d["array"]))
        c.set_cmap(d["cmap"])
        c.set_clim(*d["limits"])
    c.set(**_common(d))


def _unmasked(pair):
    """`_masked`'s [data, mask] as the array it was."""
    import numpy as np

    data, mask = pair
    return data if mask is None else np.ma.masked_array(data, mask)


def _add_text(ax, d):
    style = {k: d[k] for k in ("color", "fontsize", "ha", "va")}
    if d["xy"] is not None:
        ax.annotate(d["text"], xy=d["xy"], xytext=d["at"], **style)
    else:
        ax.text(d["at"][0], d["at"][1], d["text"], **style)


def decode_bars(args, item):
    ax = item(args[0])
    bars = [c for c in ax.containers if type(c).__name__ == "BarContainer"]
    if not 0 <= int(args[1]) < len(bars):
        raise ValueError("a bar container its axes do not hold")
    return bars[int(args[1])]


DECODERS = {
    "Figure": decode_figure,
    "FigureRef": decode_reference,
    "Axes": decode_axes,
    "BarContainer": decode_bars,
}
