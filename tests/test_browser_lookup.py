"""The built-book check finds its browser in the documented order: $CHROMIUM, system, Playwright's own."""

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
