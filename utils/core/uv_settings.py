"""uv's settings for installing what this machine's pip would install.

`make` sets the venv up with uv (parallel, with its own cache), and BigCodeBench's libraries are
installed with the venv's uv where it has one (`evalpack.hooks.bigcodebench.libs`). uv does not
read pip's configuration, so these settings hand it over:

* where pip looks: its index, extra indexes, find-links folders, constraint files, CA file,
  trusted hosts, time-out and pre-releases, as pip's own configuration gives them (pip.conf
  files and PIP_* variables, with pip's precedence: a PIP_* variable, then the `install`
  section, then `global`). Other pip settings (`no-index`, `only-binary`, ...) are not carried
  over;
* pip's rules: the best version from any index (uv takes the first index that has the package
  unless told otherwise), and bytecode compiled at install time.

A UV_* variable already set in the environment is left as it is. Run as a script (by its path,
with `python -I` so that its folder's modules are not on the path: `make` runs it before the
pack is installed) it prints the settings as `export` lines for a shell's `eval`.
"""

from __future__ import annotations

import os
import shlex

# pip's setting: (uv's variable, the separator uv expects between several values)
FROM_PIP = {
    "index-url": ("UV_DEFAULT_INDEX", " "),
    "extra-index-url": ("UV_INDEX", " "),
    "find-links": ("UV_FIND_LINKS", ","),
    "constraint": ("UV_CONSTRAINT", " "),
    "cert": ("SSL_CERT_FILE", " "),
    "trusted-host": ("UV_INSECURE_HOST", " "),
    "default-timeout": ("UV_HTTP_TIMEOUT", " "),
}
PIP_RULES = {"UV_INDEX_STRATEGY": "unsafe-best-match", "UV_COMPILE_BYTECODE": "1"}
TRUE = {"1", "true", "yes", "on"}  # what pip's configuration takes for a yes


def pip_settings() -> dict[str, str]:
    """pip's value of each setting uv is given, from pip's own reading of its configuration
    (pip has no public API for it; `pip config list` shows every file's values without their
    precedence)."""
    from pip._internal.configuration import Configuration
    from pip._internal.exceptions import ConfigurationError

    config = Configuration(isolated=False)
    config.load()
    found = {}
    for name in [*FROM_PIP, "pre"]:
        for key in (f":env:.{name}", f"install.{name}", f"global.{name}"):
            try:
                found[name] = config.get_value(key)
                break
            except ConfigurationError:  # no file or variable sets it
                continue
    return found


def uv_settings(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The UV_* variables (and SSL_CERT_FILE) to add to `environ` (default: this process's)."""
    environ = os.environ if environ is None else environ
    settings = dict(PIP_RULES)
    pip = pip_settings()
    for name, (variable, separator) in FROM_PIP.items():
        if pip.get(name):
            settings[variable] = separator.join(pip[name].split())
    if pip.get("pre", "").lower() in TRUE:
        settings["UV_PRERELEASE"] = "allow"
    return {name: value for name, value in settings.items() if name not in environ}


def main() -> None:
    for variable, value in uv_settings().items():
        print(f"export {variable}={shlex.quote(value)}")


if __name__ == "__main__":
    main()
