"""Print, for a shell's `eval`, the settings that make `uv pip install` install what this
machine's pip would install, so that `make` can set up with uv (parallel, with its own cache:
half pip's time) without knowing the machine:

* where pip looks: its index, extra indexes, find-links folders, constraint files and CA
  certificates, as pip's
  own configuration gives them (pip.conf files and PIP_* variables, pip's precedence: a PIP_*
  variable, then the `install` section, then `global`);
* pip's rules: the best version from any index (uv takes the first index that has the package
  unless told otherwise), and bytecode compiled at install time.

Run with the interpreter of the venv being set up (its pip reads the configuration).
"""

import shlex

# pip's own reading of its settings (pip has no public API for it; `pip config list` shows
# every file's values without their precedence)
from pip._internal.configuration import Configuration
from pip._internal.exceptions import ConfigurationError

# pip's setting: (uv's variable, the separator uv expects between several values)
SETTINGS = {
    "index-url": ("UV_DEFAULT_INDEX", " "),
    "extra-index-url": ("UV_INDEX", " "),
    "find-links": ("UV_FIND_LINKS", ","),
    "constraint": ("UV_CONSTRAINT", " "),
    "cert": ("SSL_CERT_FILE", " "),
}
PIP_RULES = {"UV_INDEX_STRATEGY": "unsafe-best-match", "UV_COMPILE_BYTECODE": "1"}


def pip_setting(config: Configuration, name: str) -> str | None:
    for key in (f":env:.{name}", f"install.{name}", f"global.{name}"):
        try:
            return config.get_value(key)
        except ConfigurationError:  # no file or variable sets it
            continue
    return None


def main() -> None:
    config = Configuration(isolated=False)
    config.load()
    values = dict(PIP_RULES)
    for name, (variable, separator) in SETTINGS.items():
        value = pip_setting(config, name)
        if value:
            values[variable] = separator.join(value.split())
    for variable, value in values.items():
        print(f"export {variable}={shlex.quote(value)}")


if __name__ == "__main__":
    main()
