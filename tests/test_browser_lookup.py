"""The built-book check finds its browser in the documented order: $CHROMIUM, the headless shell, system,
Playwright's own; the checks that need a full browser skip the headless shell."""

from __future__ import annotations

import os
import stat

import pytest

from tests.book import browser as lookup


def _fake(folder, name: str) -> str:
    path = folder / name
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


@pytest.fixture
def no_playwright(monkeypatch):
    monkeypatch.setattr(lookup, "playwright_chromium", lambda: None)


def test_chromium_variable_comes_first(tmp_path, no_playwright):
    mine = _fake(tmp_path, "my-chromium")
    system = tmp_path / "bin"
    system.mkdir()
    _fake(system, "chromium")
    found = lookup.find_browser({"CHROMIUM": mine, "PATH": str(system)})
    assert found == lookup.Browser("env", mine)


def test_a_chromium_variable_that_names_nothing_is_an_error_not_a_fallback(tmp_path, no_playwright):
    system = tmp_path / "bin"
    system.mkdir()
    _fake(system, "chromium")
    with pytest.raises(lookup.BrowserNotFound, match="CHROMIUM="):
        lookup.find_browser({"CHROMIUM": str(tmp_path / "missing"), "PATH": str(system)})


def test_system_browser_before_playwright(tmp_path, monkeypatch):
    monkeypatch.setattr(lookup, "playwright_chromium", lambda: "/should/not/be/used")
    system = tmp_path / "bin"
    system.mkdir()
    chrome = _fake(system, "google-chrome")
    assert lookup.find_browser({"PATH": str(system)}) == lookup.Browser("system", chrome)


def test_the_headless_shell_before_a_full_chromium_and_skipped_where_a_full_one_is_needed(tmp_path, no_playwright):
    system = tmp_path / "bin"
    system.mkdir()
    full = _fake(system, "chromium")
    shell = _fake(system, "chromium-headless-shell")
    found = lookup.find_browser({"PATH": str(system)})
    assert found == lookup.Browser("shell", shell) and found.headless_shell
    assert lookup.find_browser({"PATH": str(system)}, shell=False) == lookup.Browser("system", full)
    assert not lookup.find_browser({"PATH": str(system)}, shell=False).headless_shell
    (system / "chromium").unlink()  # a shell alone is no full browser
    with pytest.raises(lookup.BrowserNotFound):
        lookup.find_browser({"PATH": str(system)}, shell=False)


def test_headless_shells_are_known_by_their_file_names():
    for path in ("/usr/bin/chromium-headless-shell",
                 "/root/.cache/ms-playwright/chromium_headless_shell-1200/chrome-linux/headless_shell",
                 "/opt/chrome-headless-shell-linux64/chrome-headless-shell"):
        assert lookup.is_headless_shell(path), path
    for path in ("/usr/bin/chromium", "/root/.cache/ms-playwright/chromium-1200/chrome-linux64/chrome",
                 "/usr/bin/google-chrome"):
        assert not lookup.is_headless_shell(path), path


def test_playwright_chromium_is_the_last_resort(tmp_path, monkeypatch):
    own = _fake(tmp_path, "chrome")
    monkeypatch.setattr(lookup, "playwright_chromium", lambda: own)
    assert lookup.find_browser({"PATH": str(tmp_path / "empty")}) == lookup.Browser("playwright", own)


def test_nothing_found_says_how_to_get_one(tmp_path, no_playwright):
    with pytest.raises(lookup.BrowserNotFound, match="apt-get install chromium"):
        lookup.find_browser({"PATH": str(tmp_path)})


def test_install_step_fetches_only_when_nothing_else_exists(tmp_path, monkeypatch, capsys):
    calls = []
    monkeypatch.setattr(lookup, "install_playwright_chromium", lambda: calls.append(1) or False)
    monkeypatch.setattr(lookup, "playwright_chromium", lambda: None)
    monkeypatch.setattr(os, "environ", {"PATH": str(tmp_path)})
    assert lookup.main(["--install"]) == 1  # no network: the download fails, the message stays
    assert calls == [1] and "apt-get install chromium" in capsys.readouterr().err
    system = tmp_path / "bin"
    system.mkdir()
    _fake(system, "chromium")
    monkeypatch.setattr(os, "environ", {"PATH": str(system)})
    assert lookup.main(["--install"]) == 0
    assert calls == [1], "a system browser exists, so nothing may be downloaded"
    _fake(system, "chromium-headless-shell")
    assert lookup.main(["--install"]) == 0 and calls == [1]
    out = capsys.readouterr().out
    assert "browser (shell)" in out and "full browser, for the /favicon.ico checks (system)" in out
