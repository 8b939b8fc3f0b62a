"""The browser test can fail: a small broken site must be caught, check by check.

Run by `make browser` beside tests/browser_site.py (not by `make unit`: it needs chromium). It
writes a two-page site with one fault of each kind the browser test looks for (issue 61's among
them: TeX outside maths, an image wider than its column, a page that disables zoom, a pale and a
repeated caption, a name broken in a table cell, a wide table without its first column in view),
runs the browser test on it in a subprocess, and checks that each fault is reported and the clean
page passes.
"""
import base64
import os
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import browser_site  # noqa: E402

def white_png(width: int, height: int = 1) -> str:
    """A plain white PNG of the given pixel size, base64-encoded."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    rows = b"".join(b"\x00" + b"\xff\xff\xff" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows))
           + chunk(b"IEND", b""))
    return base64.b64encode(png).decode()


PNG_1PX = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJ"
           "RU5ErkJggg==")
HEAD = ('<html><head><meta name="viewport" content="width=device-width, initial-scale=1"></head>'
        '<body><main><article class="bd-article">')
# a page that stops the reader pinching a figure larger
NO_ZOOM_HEAD = HEAD.replace("initial-scale=1", "initial-scale=1, maximum-scale=1, user-scalable=no")
TAIL = '<a href="../_sources/ok.md">download</a></article></main></body></html>'
# a solution folded as sphinx-togglebutton folds one: its code laid out, but hidden; a click on
# its title opens it (OPENS), or, on the broken page, does nothing
FOLDED = ('<div class="admonition dropdown toggle-hidden"><p class="admonition-title"{}>Solution</p>'
          '<div style="height: 0; margin: 0; opacity: 0; visibility: hidden; display: block">'
          '<pre>def my_group_advantages(r): ...</pre></div></div>')
OPENS = (' onclick="const b = this.nextElementSibling; b.style.visibility = \'visible\';'
         ' b.style.height = \'auto\'; b.style.opacity = 1"')
CLEAN = (HEAD + f'<p>fine</p><img src="data:image/png;base64,{PNG_1PX}" width="20">'
         + FOLDED.format(OPENS) + TAIL)
BROKEN = NO_ZOOM_HEAD + (
    '<img src="missing.png">'                                           # an image that fails
    '<div class="math">$$x^2$$</div>'                                   # math MathJax never set
    '<a href="nowhere.html">a dead link</a><a href="ok.html#no-such-anchor">a dead anchor</a>'
    '<div style="width: 900px">a wide block with no scroll box of its own</div>'
    '<img src="https://example.org/remote.png">'                        # a request off localhost
    '<script>undefinedFunction()</script>'                              # a JavaScript error
    '<p>the patterns `L..` and <span class="pasted-text" style="font-weight: 700">7</span></p>'  # glue leaks
    '<p>lower in np.int64(2) of the rates</p><p>read from PosixPath(\'/tmp/x\')</p>'  # glued reprs
    # a figure drawn 1000 px wide shown at 100 px (its text near 1 px), numbered through the book,
    # its caption pale grey (2.3:1 on white), and repeated in italics under it
    f'<figure><img src="data:image/png;base64,{white_png(1000, 10)}" alt="a wide figure" '
    'style="width: 100px">'
    '<figcaption style="color: #aaa"><span class="caption-number">Fig. 28 </span>a figure drawn '
    'to show the lava floor</figcaption></figure>'
    '<p><em>A figure drawn to show the lava floor.</em> The prose goes on.</p>'
    # ... and a caption whose sentence the paragraph under it repeats word for word
    f'<figure><img src="data:image/png;base64,{PNG_1PX}" width="20" alt="a floor">'
    '<figcaption>The floor is lava, and the bot leaps over it.</figcaption></figure>'
    '<p>As drawn, the floor is lava and the bot leaps over it; twice.</p>'
    # an image wider than the column at both widths
    f'<img src="data:image/png;base64,{white_png(1600, 4)}" alt="an image wider than its column" '
    'style="width: 1600px; max-width: none">'
    # TeX outside maths: chapter 5's Caveat 2 as it rendered, and a span MathJax never saw
    '<p>because $\\mathrm{KL}(\\pi_{\\text{ref}}|\\pi_\\theta) = \\sum_a</p>'
    '<ul><li>\\sum_a \\pi_{\\text{ref}}\\log\\pi_\\theta$ and the first sum</li></ul>'
    '<p>a span $x^2 + y$ left as typed</p>'
    # a setting's name broken across lines in a table cell
    '<table><tr><td style="width: 60px"><code style="word-break: break-all">'
    'importance_sampling_level</code></td></tr></table>'
    '<div class="cell_output"><pre style="width: 200px; overflow-x: auto">' + "x" * 300 + '</pre></div>'
    # a wide table that neither scrolls with a cue nor keeps its first column in view
    '<table class="table"><tr><td>name</td><td style="white-space: nowrap">' + "wide " * 400
    + '</td></tr></table>'
    '<mjx-container display="true" style="display: block; width: 100px; overflow-x: auto">'
    '<span style="display: inline-block; width: 500px">E = mc^2</span></mjx-container>'
    # an exercise's solution drawn open (no toggle script folds it here)
    '<div class="admonition dropdown"><p class="admonition-title">Solution</p>'
    '<pre>def my_group_advantages(r): ...</pre></div>'
    + FOLDED.format("")  # and one folded that a click does not open
) + TAIL


def test_a_broken_site_fails_and_a_clean_one_passes(tmp_path):
    path, why = browser_site.chromium_path()
    if path is None:
        browser_site.loud_skip(why)
    site = tmp_path / "html"
    (site / "book").mkdir(parents=True)
    (site / "_sources").mkdir()
    (site / "_sources" / "ok.md").write_text("# ok\n")
    (site / "book" / "ok.html").write_text(CLEAN)
    (site / "book" / "broken.html").write_text(BROKEN)
    env = dict(os.environ, BOOK_HTML=str(site), BOOK_SCREENSHOTS=str(tmp_path / "shots"))
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          str(HERE / "browser_site.py")], env=env, capture_output=True, text=True,
                         timeout=300)
    out = run.stdout + run.stderr
    assert run.returncode == 1, out
    assert "1 failed, 1 passed" in out, out
    for fault in ("image did not load: ", "math not rendered", "link to a missing file: nowhere.html",
                  "link to a missing anchor: ok.html#no-such-anchor", "horizontal overflow at 390 px",
                  "request leaving localhost: https://example.org/remote.png", "JavaScript error",
                  "literal backtick in prose: the patterns `L..`",
                  "glued value in bold where the prose is not: 7",
                  "a Python repr in prose: lower in np.int64(2) of the rates",
                  "a Python repr in prose: read from PosixPath('/tmp/x')",
                  "figure text 1.2 px (< 9) at 1280 px: a wide figure",
                  "image wider than its column at 1280 px (1600 > ",
                  "image wider than its column at 390 px (1600 > ",
                  "the page disables zoom (viewport",
                  "caption text at 2.32:1 contrast (< 4.5) at 1280 px: Fig. 28 a figure",
                  "caption text at 2.32:1 contrast (< 4.5) at 390 px: Fig. 28 a figure",
                  "caption printed twice (the paragraph under the figure repeats it): Fig. 28",
                  "caption printed twice (the paragraph under the figure repeats it): The floor is",
                  "TeX outside maths: TeX command \\mathrm in: because $\\mathrm{KL}",
                  "TeX outside maths: TeX command \\sum in: \\sum_a",
                  "TeX outside maths: a $-delimited span: $x^2 + y$",
                  "code broken across lines in a table at 1280 px: importance_sampling_level",
                  "code broken across lines in a table at 390 px: importance_sampling_level",
                  "wider than its box at 1280 px: pre", "table cut without a cue at 1280 px: name",
                  "table cut without a cue at 390 px: name",
                  "table scrolls without its first column in view at 390 px: name",
                  "figure numbers are not per page: ['Fig. 28']",
                  "equation wider than its box at 1280 px: mjx-container",
                  "equation wider than its box at 390 px: mjx-container",
                  "[desktop] exercise solution 1 is open", "[phone] exercise solution 1 is open",
                  "exercise solution 2 does not open on a click"):
        assert fault in out, f"not reported: {fault}\n{out}"
    shots = sorted(p.name for p in (tmp_path / "shots").glob("*.png"))
    assert shots == ["book__broken-desktop.png", "book__broken-phone.png",
                     "book__ok-desktop.png", "book__ok-phone.png"]


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
