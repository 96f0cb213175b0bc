"""BigCodeBench's libraries folder (`python -m evalpack.hooks.bigcodebench.libs`): where it is,
what counts as installed, and a missing or half-installed one."""

import pytest

from evalpack.hooks.bigcodebench import libs as bigcodebench_libs
from evalpack.hooks.bigcodebench import task as bigcodebench


def test_missing_libraries_are_one_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv(bigcodebench_libs.ENV, str(tmp_path / "none"))
    with pytest.raises(RuntimeError, match="bigcodebench.libs install"):
        bigcodebench.execute_samples([["x"]], [{"code_prompt": "", "entry_point": "f"}])


def test_libraries_folder_and_pins(monkeypatch, tmp_path, capsys):
    pins = bigcodebench_libs.requirements_file().read_text().splitlines()
    assert "pandas==2.0.3" in pins and "matplotlib==3.7.0" in pins and "numpy==1.26.4" in pins
    monkeypatch.setenv(bigcodebench_libs.ENV, str(tmp_path / "libs"))
    assert bigcodebench_libs.main(["path"]) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / "libs")
    assert not bigcodebench_libs.installed()
    (tmp_path / "libs" / "numpy").mkdir(parents=True)  # installed before the NLTK data was
    assert not bigcodebench_libs.installed()
    (tmp_path / "libs" / "nltk_data").mkdir()
    assert bigcodebench_libs.installed()
    assert bigcodebench_libs.main(["nonsense"]) == 2


def test_an_interrupted_install_leaves_the_old_folder(monkeypatch, tmp_path):
    """Both steps go into a staging folder renamed into place at the end: a failing NLTK step
    (a changed wheel, no network) leaves neither a half folder nor a changed old one."""
    libs = tmp_path / "libs"
    monkeypatch.setenv(bigcodebench_libs.ENV, str(libs))

    def fake_pip(target):
        (target / "numpy").mkdir(parents=True)
        return 0

    def fake_nltk(status):
        def copy(target):
            target.mkdir(parents=True)
            return status

        return copy

    monkeypatch.setattr(bigcodebench_libs, "install_libraries", fake_pip)
    monkeypatch.setattr(bigcodebench_libs, "install_nltk_data", fake_nltk(1))
    assert bigcodebench_libs.install() == 1
    assert not bigcodebench_libs.installed() and not libs.exists()
    assert list(tmp_path.iterdir()) == []  # the failed install's staging folder is gone
    monkeypatch.setattr(bigcodebench_libs, "install_nltk_data", fake_nltk(0))
    assert bigcodebench_libs.install() == 0 and bigcodebench_libs.installed()
    (libs / "numpy" / "old").touch()
    monkeypatch.setattr(bigcodebench_libs, "install_nltk_data", fake_nltk(1))
    assert bigcodebench_libs.install() == 1 and (libs / "numpy" / "old").exists()  # kept
    monkeypatch.setattr(bigcodebench_libs, "install_nltk_data", fake_nltk(0))
    assert bigcodebench_libs.install() == 0 and not (libs / "numpy" / "old").exists()
    assert sorted(path.name for path in tmp_path.iterdir()) == ["libs"]
