"""The report in a real browser: Debian's chromium, driven by Playwright (``executable_path``;
never a browser download), one launch for the module.

At 1280 and 400 px wide the page never scrolls sideways, every chart image has loaded, and the
console has no error; printed on A4, every table fits the page. The screenshots and the printed
PDF are kept to look at in ``build/test-artefacts/report/`` (the one place this module writes
outside ``tmp_path``: they are the test's output for a person). ``.ci/run`` installs chromium
where it is missing.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import toolkit as tk
from toolkit.lab.incident_bundle import lab_bundle

ROOT = Path(__file__).resolve().parents[1]
ARTEFACTS = ROOT / "build" / "test-artefacts" / "report"
#: As Chromium must run here: no sandbox as root, no GPU, and no background connections
#: (the machine's closed network refuses them, many at a time).
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
WIDTHS = (1280, 400)


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("playwright is not installed (pip install -e '.[dev]')")
    executable = _chromium()
    if executable is None:
        pytest.skip("no chromium on this machine (.ci/run installs Debian's package as root)")
    profile = tempfile.mkdtemp(prefix="report-chromium-")
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            profile, executable_path=executable, headless=True, args=FLAGS)  # fmt: skip
        try:
            yield context
        finally:
            context.close()
            shutil.rmtree(profile, ignore_errors=True)


def _look(browser: Any, report: Path, name: str) -> dict[int, dict[str, Any]]:
    """Open ``report`` at each width; what the page measured, and a full-page screenshot."""
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    seen: dict[int, dict[str, Any]] = {}
    for width in WIDTHS:
        page = browser.new_page()
        problems: list[str] = []
        page.on("console", lambda m, out=problems: out.append(m.text) if m.type == "error"
                else None)  # fmt: skip
        page.on("pageerror", lambda e, out=problems: out.append(str(e)))
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(report.as_uri(), wait_until="load")
        measured = page.evaluate("""() => ({
            scroll: document.documentElement.scrollWidth,
            client: document.documentElement.clientWidth,
            images: Array.from(document.images).map(i => [i.alt, i.complete, i.naturalWidth]),
            wide: Array.from(document.querySelectorAll('main *'))
                .filter(e => e.getBoundingClientRect().right > window.innerWidth + 1
                             && !e.closest('.scroll'))
                .slice(0, 5).map(e => e.tagName + '.' + e.className),
            scrolled: Array.from(document.querySelectorAll('main .scroll'))
                .filter(e => e.scrollWidth > e.clientWidth + 1)
                .map(e => (e.previousElementSibling || e).textContent.slice(0, 60)),
        })""")
        page.screenshot(path=str(ARTEFACTS / f"{name}-{width}px.png"), full_page=True)
        seen[width] = {**measured, "problems": problems}
        if width == WIDTHS[0]:
            # On paper (A4 at 96 px per inch) nothing scrolls: every table fits the page.
            page.emulate_media(media="print")
            page.set_viewport_size({"width": 794, "height": 1123})
            seen[width]["print"] = page.evaluate(
                "[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
            page.pdf(path=str(ARTEFACTS / f"{name}.pdf"), print_background=True)
        page.close()
    return seen


def _check(seen: dict[int, dict[str, Any]], charts: int) -> None:
    for width, measured in seen.items():
        assert measured["scroll"] <= measured["client"], (width, measured["wide"])
        if width >= 1280:  # on a desktop screen no evidence table is cut at the card's edge
            assert measured["scrolled"] == [], (width, measured["scrolled"])
        assert len(measured["images"]) >= charts, width
        unloaded = [alt for alt, complete, natural in measured["images"]
                    if not complete or natural == 0]  # fmt: skip
        assert unloaded == [], (width, unloaded)
        assert measured["problems"] == [], (width, measured["problems"])
        if "print" in measured:
            assert measured["print"][0] <= measured["print"][1], measured["print"]


def test_the_lab_incident_report_in_chromium(browser: Any, tmp_path: Path) -> None:
    parts = lab_bundle(tmp_path / "incident")
    found = tk.investigate(parts.histories, logs=parts.logs, configs=parts.configs)
    report = tmp_path / "report.html"
    found.to_html(report)
    seen = _look(browser, report, "lab-incident")
    # the incident timeline and one activity timeline per affected run's section
    _check(seen, charts=2)
    assert (ARTEFACTS / "lab-incident.pdf").stat().st_size > 20_000


def test_a_report_of_plain_public_exports_in_chromium(browser: Any, corpus: Path,
                                                     tmp_path: Path) -> None:
    exports = tmp_path / "exports"
    exports.mkdir()
    for path in sorted((corpus / "histories").glob("temporalio__sdk-*/*.json"))[:25]:
        shutil.copy(path, exports / f"{path.parent.name}__{path.name}")
    logs = [corpus / "logs" / name for name in ("temporalio__sdk-go__integration-test.log",
                                                "temporalio__temporal__timeout-input.log")]
    found = tk.investigate(exports, logs=logs)
    report = tmp_path / "report.html"
    found.to_html(report)
    _check(_look(browser, report, "public-exports"), charts=1)


def test_the_report_head_keeps_its_layout_inside_a_notebook_page(browser: Any,
                                                                  tmp_path: Path) -> None:
    """Shown in a notebook (``_repr_html_``), the report sits in the host's own styles, and
    JupyterLab's output area floats every ``dt`` at 20% of the width and every ``dd`` at 80%:
    inside the head's grid that wrapped "When" and "Impact" one letter a line in the exported
    postmortem notebook. In a page with such rules, every term of the head is one line and
    every value takes the rest of the row."""
    parts = lab_bundle(tmp_path / "incident")
    found = tk.investigate(parts.histories, logs=parts.logs, configs=parts.configs)
    host = ("<style>.host dl, .host dt, .host dd { display: block; }"
            " .host dl { width: 100%; overflow: hidden; }"
            " .host dt { float: left; width: 20%; } .host dd { float: left; width: 80%; }"
            "</style>")  # fmt: skip
    page_file = tmp_path / "notebook.html"
    page_file.write_text(f"<html><body>{host}<main class='host'>{found._repr_html_()}</main>"
                         "</body></html>", encoding="utf-8")  # fmt: skip
    page = browser.new_page()
    page.set_viewport_size({"width": 1000, "height": 900})
    page.goto(page_file.as_uri(), wait_until="load")
    # A term's lines: the distinct tops of its text's boxes (the dt itself is as tall as its
    # row, which a long value makes two lines).
    terms = page.evaluate("""() => Array.from(document.querySelectorAll('.facts dt')).map(t => {
        const range = document.createRange();
        range.selectNodeContents(t);
        const tops = new Set(Array.from(range.getClientRects()).map(r => Math.round(r.top)));
        const value = t.nextElementSibling.getBoundingClientRect();
        const list = t.parentElement.getBoundingClientRect();
        return [t.textContent, tops.size,
                (value.right - t.getBoundingClientRect().left) / list.width];
    })""")
    page.screenshot(path=str(ARTEFACTS / "in-a-notebook.png"), full_page=True)
    page.close()
    assert len(terms) >= 4
    for text, lines, row in terms:
        assert lines == 1, (text, lines)  # one line, not a letter a line
        assert row > 0.9, (text, row)  # the value runs to the end of the row
