"""The editable install found first, wherever Python starts.

An editable install of the pack is found by a finder that setuptools appends to
`sys.meta_path`, after Python's path search. Started from the folder that holds a checkout named
`evalpack` (git's default name), that search finds the checkout itself, a folder without an
`__init__.py`, and imports it as an empty namespace package: `from evalpack import ...` fails
and the task hooks cannot import the pack. This writes `evalpack_first.pth` into the
environment's site-packages, which moves the install's finder ahead of the path search at
start-up (it runs after setuptools' own `.pth`, which sorts first). `make` runs it after it
installs the pack; after a `pip install -e .` of your own, run `python utils/core/editable_first.py`.
A non-editable install needs nothing: a regular package wins over a namespace folder anyway.
"""

from __future__ import annotations

import sysconfig
from pathlib import Path

PTH_NAME = "evalpack_first.pth"
# one line, run by `site` at start-up (a .pth line that starts with `import` is executed)
PTH_LINE = (  # a stable sort: the install's finder first, the others in their order
    "import sys; sys.meta_path.sort(key=lambda f: not getattr(f, '__module__', '')"
    ".startswith('__editable___evalpack_'))\n"
)


def install(site_packages: Path | None = None) -> Path:
    """Write the `.pth` file (idempotent); its path."""
    folder = site_packages or Path(sysconfig.get_paths()["purelib"])
    target = folder / PTH_NAME
    target.write_text(PTH_LINE, encoding="utf-8")
    return target


if __name__ == "__main__":
    install()
