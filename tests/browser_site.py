"""The built book in a real browser: every page of _build/html, at desktop and phone widths.

Run by `make browser` (part of `make test`, after the strict build), never by `make unit`: the file
name does not match pytest's test_*.py, so only an explicit path collects it. It drives Debian's
chromium (headless, fresh profile) through playwright-python with ``executable_path``: playwright's
own browser download is never used. When chromium is missing, the set-up installs it with apt-get
as root; when it cannot, every test skips with a loud message.

For each page it checks that
  * the page loads with no failed request, no JavaScript error, and no request leaving localhost;
  * every image loaded (naturalWidth > 0) and every visible one has a non-zero size;
  * every jshtml animation shows its frame and its controls (slider, buttons with their icons);
  * math rendered: every math node holds MathJax output, and no raw `$$` is left in the text;
  * no literal backtick in prose (glue pastes plain text), no Python repr of a glued value
    (``np.int64(2)``, ``PosixPath('...')``), and no glued value in bold unless the sentence around
    it is;
  * every internal link points to a page that exists, and to an anchor that exists on it, and the
    download button links the page's source (.ipynb or .md);
  * at 390 px the page has no horizontal overflow (wide equations, tables and code scroll inside
    their own box);
  * at 1280 px no code or output block is wider than its box (printed lines wrap, and code lines
    are kept within 100 characters), and at both widths no display equation is (long ones are
    broken over lines with aligned or gathered);
  * no TeX outside maths: the visible text outside maths and code holds no TeX command (\\mathrm,
    \\pi, \\sum, \\frac, ...) and no $-delimited span (a line of prose that starts a list by
    accident cuts an inline span in two: tests/test_markdown_lines.py checks the sources);
  * at both widths, every image is whole in its column (its rendered width is at most the
    column's); at 1280 px the smallest text of every figure is >= 9 px as shown: the book draws
    figures at grpo.book.plots.DPI with no text below grpo.book.plots.MIN_FONT_PT (tests/test_plots.py
    checks the sources), so the smallest text is MIN_FONT_PT * DPI / 72 px times the shown / drawn
    width. At 390 px a figure is scaled to the column and its detail is a pinch away: the page
    never disables zoom (its viewport meta), and the PNG keeps its drawn pixels;
  * at both widths, a table wider than its box scrolls in it with a cue (the fading edge of
    book.css) and keeps its first column in view (sticky), and no code element in a table is
    broken across lines (a setting's name stays whole);
  * at both widths, caption text meets WCAG AA contrast (4.5:1) against what is behind it, from
    computed styles (colour and its alpha, the opacity of every ancestor, the first opaque
    background below it), and no mask fades it; and no caption is printed twice (a paragraph
    right under a captioned figure that opens in italics, or repeats a sentence of the caption);
  * figures are numbered per page: Fig. 6.1, 6.2, ... on chapter 6, Fig. 1, 2, ... elsewhere;
and saves a full-page screenshot at both widths under _build/screenshots/. The closing table also
counts, per page, images without alt text (alt empty or just the file name) and display equations
that scroll inside their box at phone width: reported, not failed, so the chapters can catch up.
"""
from __future__ import annotations

import functools
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from urllib.parse import urldefrag, urljoin, urlparse

import pytest

from grpo.book.plots import DPI, MIN_FONT_PT

ROOT = Path(__file__).resolve().parents[1]
HTML = Path(os.environ.get("BOOK_HTML", ROOT / "_build" / "html"))        # override: the self-test
SHOTS = Path(os.environ.get("BOOK_SCREENSHOTS", ROOT / "_build" / "screenshots"))
WIDTHS = {"desktop": (1280, 900), "phone": (390, 844)}
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SUMMARY: dict = {}   # page -> what was checked, printed at the end and saved beside the screenshots
UTILITY_PAGES = {"genindex.html", "search.html", "py-modindex.html", "index.html"}  # index redirects
MIN_TEXT_PX = 9.0                  # the smallest figure text a reader should meet
MIN_CONTRAST = 4.5                 # WCAG AA, normal text


def book_pages() -> list[str]:
    """Every content page of the built book (relative paths), whatever chapters exist."""
    if not HTML.is_dir():
        return []
    return sorted(str(p.relative_to(HTML)) for p in HTML.rglob("*.html")
                  if not any(part.startswith("_") for part in p.relative_to(HTML).parts)
                  and str(p.relative_to(HTML)) not in UTILITY_PAGES)


def loud_skip(reason: str):
    banner = "!" * 78
    print(f"\n{banner}\nBROWSER TEST SKIPPED: {reason}\n{banner}\n", file=sys.stderr, flush=True)
    pytest.skip(f"BROWSER TEST SKIPPED: {reason}")


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


@functools.lru_cache(maxsize=1)
def chromium_path() -> tuple[str | None, str]:
    """Debian's chromium, installed with apt-get if missing and possible: (path, why not)."""
    path = find_chromium()
    if path:
        return path, ""
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        return None, "chromium is not installed and this user cannot apt-get install it"
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    print("\nchromium missing: apt-get update && apt-get install -y chromium", file=sys.stderr)
    for cmd in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "chromium"]):
        done = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if done.returncode:
            return None, f"`{' '.join(cmd)}` failed: {done.stderr.strip()[-300:]}"
    path = find_chromium()
    return (path, "") if path else (None, "apt-get installed no chromium binary")


def summary_lines() -> list[str]:
    """The per-page table that the root conftest prints at the end of the run."""
    lines = [f"{'page':34s} {'result':6s} {'images':>6s} {'no alt':>6s} {'anims':>5s} {'math':>5s} "
             f"{'eqs scrolling at 390 px':>24s}"]
    lines += [f"{page:34s} {r['result']:6s} {r['images']:6d} {r['without_alt_text']:6d} "
              f"{r['animations']:5d} {r['math']:5d} {r['equations_scrolling_at_390px']:24d}"
              for page, r in sorted(SUMMARY.items())]
    return lines


@pytest.fixture(scope="session")
def server():
    if not book_pages():
        pytest.fail("_build/html has no pages: run `make book` (or `make book-strict`) first")
    handler = functools.partial(_QuietHandler, directory=str(HTML))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()
    if SUMMARY:
        SHOTS.mkdir(parents=True, exist_ok=True)
        (SHOTS / "summary.json").write_text(json.dumps(SUMMARY, indent=2) + "\n")


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="session")
def browser():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        loud_skip("playwright is not installed (it is pinned in requirements.txt)")
    path, why = chromium_path()
    if path is None:
        loud_skip(why)
    with sync_playwright() as pw, tempfile.TemporaryDirectory() as profile:
        context = pw.chromium.launch_persistent_context(
            profile, executable_path=path, headless=True, args=CHROMIUM_FLAGS,
            viewport={"width": 1280, "height": 900})
        yield context
        context.close()


def open_page(browser, url: str, width: str):
    """Load ``url`` at a width; return the page and the problems seen while loading."""
    page = browser.new_page()
    # A long chapter takes ~25 s to load and as long to screenshot when the 2-core machine is busy
    # (load average 12): playwright's 30 s default then fails a page that is fine.
    page.set_default_timeout(120_000)
    page.set_viewport_size(dict(zip(("width", "height"), WIDTHS[width])))
    problems = []
    host = urlparse(url).netloc

    def route(r):
        if urlparse(r.request.url).netloc not in (host, "") and not r.request.url.startswith("data:"):
            problems.append(f"request leaving localhost: {r.request.url}")
            return r.abort()
        return r.continue_()

    page.route("**/*", route)
    page.on("pageerror", lambda exc: problems.append(f"JavaScript error: {exc}"))
    page.on("requestfailed", lambda req: problems.append(f"request failed: {req.url}")
            if urlparse(req.url).netloc == host else None)
    page.on("response", lambda resp: problems.append(f"HTTP {resp.status}: {resp.url}")
            if resp.status >= 400 else None)
    page.goto(url, wait_until="load")
    page.wait_for_function("() => !window.MathJax || (MathJax.startup && MathJax.startup.promise)",
                           timeout=20_000)
    page.evaluate("() => window.MathJax && MathJax.startup.promise")
    page.wait_for_timeout(300)        # let jshtml players draw their first frame
    return page, problems


CHECK_JS = r"""() => {
  const out = {images: [], math: 0, rawMath: [], anims: [], links: []};
  const article = document.querySelector('main') || document.body;
  for (const img of article.querySelectorAll('img')) {
    const r = img.getBoundingClientRect();
    const hidden = img.closest('details:not([open])') || getComputedStyle(img).display === 'none'
                   || img.offsetParent === null;
    const alt = (img.getAttribute('alt') || '').trim();
    out.images.push({src: (img.currentSrc || img.src || img.id).slice(0, 80), complete: img.complete,
                     natural: img.naturalWidth, w: r.width, h: r.height, hidden: !!hidden,
                     described: alt.length > 0 && !/\.(png|jpe?g|svg|gif)$/i.test(alt)
                                || !!img.closest('.animation')});
  }
  const mathNodes = article.querySelectorAll('.math, span.math, div.math');
  out.math = mathNodes.length;
  for (const m of mathNodes) if (!m.querySelector('mjx-container') && !m.closest('mjx-container'))
    out.rawMath.push(m.textContent.slice(0, 60));
  const walker = document.createTreeWalker(article, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const t = walker.currentNode;
    if (t.textContent.includes('$$') && !t.parentElement.closest('pre, code, script, style, .highlight'))
      out.rawMath.push('raw $$: ' + t.textContent.trim().slice(0, 60));
  }
  for (const a of article.querySelectorAll('.animation')) {
    const img = a.querySelector('img');
    const buttons = [...a.querySelectorAll('.anim-buttons button')];
    out.anims.push({frame: img ? img.naturalWidth : 0, slider: !!a.querySelector('input[type=range]'),
                    buttons: buttons.length,
                    drawnButtons: buttons.filter(b => b.getBoundingClientRect().width > 0).length,
                    icons: buttons.filter(b => { const i = b.querySelector('svg, i');
                      return i && i.getBoundingClientRect().width > 0; }).length});
  }
  // glue pastes plain text: a backtick meant as code shows literally in the sentence
  // and a value glued without int()/float()/str() shows its repr: np.int64(2), PosixPath('...')
  out.backticks = [];
  out.reprs = [];
  const prose = document.createTreeWalker(article, NodeFilter.SHOW_TEXT);
  while (prose.nextNode()) {
    const t = prose.currentNode;
    const inCode = t.parentElement.closest('pre, code, script, style, .highlight, mjx-container');
    if (t.textContent.includes('`') && !inCode)
      out.backticks.push(t.textContent.trim().slice(0, 60));
    const repr = t.textContent.match(/np\.(int|uint|float|bool_?)\d*\(|(Posix|Windows)Path\(/);
    if (repr && !inCode) out.reprs.push(t.textContent.trim().slice(0, 60));
  }
  // a glued value is part of its sentence: bold only where the prose makes it bold
  out.boldGlue = [...article.querySelectorAll('span.pasted-text')]
    .filter(e => parseInt(getComputedStyle(e).fontWeight) >= 600 && !e.closest('strong, b, th'))
    .map(e => e.textContent.trim().slice(0, 40));
  // no TeX outside maths and code: a TeX command in a text node, or a $-delimited span in a
  // block's text (a span may cross elements); the dollarmath rule: no space inside either $, and
  // no digit right after the closing one (so "$5 and $10" is prose)
  const SKIP = 'pre, code, kbd, samp, script, style, textarea, .highlight, mjx-container, .math';
  out.tex = [];
  const texWalk = document.createTreeWalker(article, NodeFilter.SHOW_TEXT);
  while (texWalk.nextNode()) {
    const t = texWalk.currentNode;
    if (!t.parentElement || t.parentElement.closest(SKIP)) continue;
    const m = t.textContent.match(/\\(?:[A-Za-z]{2,}|[{}|_^])/);
    if (m) out.tex.push('TeX command ' + m[0] + ' in: '
                        + t.textContent.slice(Math.max(0, m.index - 20), m.index + 40).trim());
  }
  const blocks = 'p, li, dt, dd, td, th, figcaption, h1, h2, h3, h4, h5, h6, caption, blockquote';
  for (const b of article.querySelectorAll(blocks)) {
    if (b.closest(SKIP)) continue;
    let text = '';
    const w = document.createTreeWalker(b, NodeFilter.SHOW_TEXT);
    while (w.nextNode()) if (!w.currentNode.parentElement.closest(SKIP)) text += w.currentNode.textContent;
    const m = text.match(/\$(?!\s)[^$]{1,300}?(?<!\s)\$(?!\d)/);
    if (m) out.tex.push('a $-delimited span: ' + m[0].slice(0, 60));
  }
  out.tex = [...new Set(out.tex)];
  const viewport = document.querySelector('meta[name="viewport"]');
  out.viewport = viewport ? viewport.getAttribute('content') : null;
  for (const a of document.querySelectorAll('a[href]')) out.links.push(a.getAttribute('href'));
  out.download = [...document.querySelectorAll('a[href*="_sources/"]')].map(a => a.getAttribute('href'));
  return out;
}"""

# At each width: figures' shown / drawn width, tables wider than their box and whether they scroll
# with a cue, and (checked at 1280 px) code, output and display-math boxes whose content is wider
WIDTH_JS = r"""() => {
  const art = document.querySelector('article.bd-article') || document.querySelector('main')
              || document.body;
  const visible = e => e.offsetParent !== null && e.getBoundingClientRect().width > 0;
  const name = i => (i.getAttribute('alt') || i.src).slice(0, 50);
  const figures = [...art.querySelectorAll('figure img, div.cell_output img')]
    .filter(i => visible(i) && !i.closest('.animation') && i.naturalWidth > 0)
    .map(i => ({src: name(i), scale: i.getBoundingClientRect().width / i.naturalWidth}));
  // every image against the article's column (its content box)
  const as = getComputedStyle(art);
  const column = art.clientWidth - parseFloat(as.paddingLeft) - parseFloat(as.paddingRight);
  const images = [...art.querySelectorAll('img')].filter(i => visible(i) && i.naturalWidth > 0)
    .map(i => ({src: name(i), width: i.getBoundingClientRect().width, column}));
  const tables = [...art.querySelectorAll('table')].filter(t => visible(t) && !t.closest('.highlight'))
    .map(t => { const s = getComputedStyle(t), box = t.scrollWidth > t.clientWidth + 1 ? t : t.parentElement;
                const b = getComputedStyle(box);
                const row = t.querySelector('tr');
                const first = row && row.querySelector('th, td');
                return {head: t.innerText.trim().slice(0, 40), wider: box.scrollWidth > box.clientWidth + 1,
                        scrolls: ['auto', 'scroll'].includes(b.overflowX),
                        cue: (b.backgroundImage || '').includes('gradient')
                             || (b.maskImage || b.webkitMaskImage || '').includes('gradient'),
                        columns: row ? row.querySelectorAll('th, td').length : 0,
                        sticky: !!first && getComputedStyle(first).position === 'sticky'}; });
  // a code element drawn on more than one line inside a table: a name broken in two
  const brokenCode = [...art.querySelectorAll('table code')]
    .filter(c => visible(c) && c.getClientRects().length > 1)
    .map(c => c.textContent.trim().slice(0, 50));
  const overBox = sel => [...art.querySelectorAll(sel)]
    .filter(e => visible(e) && e.scrollWidth > e.clientWidth + 1)
    .map(e => e.tagName.toLowerCase() + ' ' + (e.scrollWidth - e.clientWidth) + ' px over: '
              + e.textContent.trim().split('\n')[0].slice(0, 50));
  const wide = overBox('pre'), wideMath = overBox('mjx-container[display="true"]');
  const captions = [...art.querySelectorAll('figcaption .caption-number, .caption .caption-number')]
    .map(e => e.textContent.trim());
  return {figures, images, tables, brokenCode, wide, wideMath, captions,
          captionStyle: captionContrast(art)};

  // WCAG contrast of each caption's text, from computed styles: the colour's alpha times every
  // ancestor's opacity, over the backgrounds below it (translucent ones composited onto the first
  // opaque one, else the white canvas); a mask on the caption or an ancestor fades it: reported
  function captionContrast(root) {
    const parse = c => {
      let m = c.match(/^rgba?\(([^)]*)\)/);
      if (m) { const p = m[1].split(/[\s,\/]+/).filter(Boolean).map(parseFloat);
               return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1]; }
      m = c.match(/^color\(srgb ([^)]*)\)/);
      if (m) { const p = m[1].split(/[\s\/]+/).filter(Boolean).map(parseFloat);
               return [255 * p[0], 255 * p[1], 255 * p[2], p.length > 3 ? p[3] : 1]; }
      return [0, 0, 0, 0];
    };
    const over = (top, a, bottom) => top.map((v, k) => a * v + (1 - a) * bottom[k]);
    const lum = c => { const l = c.map(v => { v /= 255;
                         return v <= 0.04045 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); });
                       return 0.2126 * l[0] + 0.7152 * l[1] + 0.0722 * l[2]; };
    const out = [];
    for (const cap of root.querySelectorAll('figcaption')) {
      if (!visible(cap)) continue;
      const holders = new Set();
      const w = document.createTreeWalker(cap, NodeFilter.SHOW_TEXT);
      while (w.nextNode()) {              // the text a reader sees: not maths, not the hidden
        const e = w.currentNode.parentElement;   // permalink (#) that shows on hover
        if (w.currentNode.textContent.trim() && !e.closest('mjx-container, .headerlink')
            && getComputedStyle(e).visibility === 'visible') holders.add(e);
      }
      let worst = null, masked = false;
      for (const el of holders) {
        const layers = [];
        let opacity = 1;
        for (let e = el; e; e = e.parentElement) {
          const s = getComputedStyle(e);
          opacity *= parseFloat(s.opacity);
          if ((s.maskImage && s.maskImage !== 'none') || (s.webkitMaskImage && s.webkitMaskImage !== 'none'))
            masked = true;
          layers.push(parse(s.backgroundColor));
        }
        let bg = [255, 255, 255];
        const firstOpaque = layers.findIndex(l => l[3] >= 1);
        const below = firstOpaque < 0 ? layers : layers.slice(0, firstOpaque + 1);
        for (const l of below.reverse()) bg = over(l.slice(0, 3), l[3], bg);
        const fg = parse(getComputedStyle(el).color);
        const shown = over(fg.slice(0, 3), fg[3] * opacity, bg);
        const [a, b] = [lum(shown), lum(bg)].sort((x, y) => y - x);
        const ratio = (a + 0.05) / (b + 0.05);
        if (worst === null || ratio < worst) worst = ratio;
      }
      // the paragraph right under the figure (past the cell that holds it), if any
      let el = cap.closest('figure');
      while (el && el !== root && !el.nextElementSibling) el = el.parentElement;
      const next = el && el !== root ? el.nextElementSibling : null;
      const lead = next && next.tagName === 'P' ? [...next.childNodes]
        .find(n => n.nodeType === 1 || n.textContent.trim()) : null;
      // ... or it repeats a sentence of the caption word for word (six words or more)
      const norm = t => ' ' + (t.toLowerCase().match(/[a-z0-9]+/g) || []).join(' ') + ' ';
      const nextText = next && next.tagName === 'P' ? norm(next.textContent) : '';
      const bare = cap.cloneNode(true);
      bare.querySelectorAll('.caption-number, .headerlink').forEach(e => e.remove());
      const repeated = !!nextText && bare.textContent.split(/[.;:!?](?:\s|$)/)
        .map(norm).some(t => t.trim().split(' ').length >= 6 && nextText.includes(t));
      out.push({caption: cap.textContent.trim().replace(/\s+/g, ' ').slice(0, 50),
                ratio: worst === null ? null : Math.round(worst * 100) / 100, masked,
                twice: !!(lead && lead.nodeType === 1 && ['EM', 'I'].includes(lead.tagName)) || repeated,
                next: next ? next.textContent.trim().slice(0, 50) : ''});
    }
    return out;
  }
}"""


def figure_numbers_ok(rel: str, captions: list[str]) -> bool:
    """Chapter NN's figures read Fig. NN.1, NN.2, ...; any other page's Fig. 1, 2, ..."""
    found = re.match(r"chapters/(\d+)_", rel)
    prefix = f"{int(found.group(1))}." if found else ""
    return captions == [f"Fig. {prefix}{k}" for k in range(1, len(captions) + 1)]


def width_failures(rel: str, width: str, found: dict) -> list[str]:
    """What WIDTH_JS found at one width, as failures."""
    out = []
    px_wide = WIDTHS[width][0]
    for img in found["images"]:
        if img["width"] > img["column"] + 1:
            out.append(f"image wider than its column at {px_wide} px ({img['width']:.0f} > "
                       f"{img['column']:.0f} px): {img['src']}")
    if width == "desktop":        # at 390 px a figure fits the column; its detail is a pinch away
        for fig in found["figures"]:
            px = MIN_FONT_PT * DPI / 72 * fig["scale"]
            if px < MIN_TEXT_PX:
                out.append(f"figure text {px:.1f} px (< {MIN_TEXT_PX:g}) at {px_wide} px: "
                           f"{fig['src']}")
    for t in found["tables"]:
        if t["wider"] and not (t["scrolls"] and t["cue"]):
            out.append(f"table cut without a cue at {px_wide} px: {t['head']}")
        if t["wider"] and t["columns"] > 1 and not t["sticky"]:
            out.append(f"table scrolls without its first column in view at {px_wide} px: "
                       f"{t['head']}")
    out += [f"code broken across lines in a table at {px_wide} px: {c}" for c in found["brokenCode"]]
    for cap in found["captionStyle"]:
        if cap["ratio"] is not None and cap["ratio"] < MIN_CONTRAST:
            out.append(f"caption text at {cap['ratio']:.2f}:1 contrast (< {MIN_CONTRAST:g}) at "
                       f"{px_wide} px: {cap['caption']}")
        if cap["masked"]:
            out.append(f"caption faded by a mask at {px_wide} px: {cap['caption']}")
        if cap["twice"] and width == "desktop":
            out.append(f"caption printed twice (the paragraph under the figure repeats it): "
                       f"{cap['caption']} / {cap['next']}")
    out += [f"equation wider than its box at {px_wide} px: {w}" for w in found["wideMath"]]
    if width == "desktop":
        out += [f"wider than its box at {px_wide} px: {w}" for w in found["wide"]]
        if not figure_numbers_ok(rel, found["captions"]):
            out.append(f"figure numbers are not per page: {found['captions'][:6]}")
    return out


def zoom_blocked(viewport: str | None) -> bool:
    """Whether a viewport meta tag stops a reader pinching a figure larger (user-scalable=no, or
    a maximum-scale below 2)."""
    content = (viewport or "").replace(" ", "").lower()
    if re.search(r"user-scalable=(no|0)(,|$)", content):
        return True
    found = re.search(r"maximum-scale=([0-9.]+)", content)
    return bool(found) and float(found.group(1)) < 2


OVERFLOW_JS = """() => {
  const vw = document.documentElement.clientWidth;
  const offenders = [];
  const main = document.querySelector('article.bd-article') || document.querySelector('main')
               || document.body;
  for (const el of main.querySelectorAll('*')) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.right <= vw + 1) continue;
    // inside a box that scrolls on its own: fine
    let p = el.parentElement, scrolls = false;
    while (p && p !== document.body) {
      const s = getComputedStyle(p);
      if (['auto', 'scroll', 'hidden'].includes(s.overflowX) && p.getBoundingClientRect().right <= vw + 1) {
        scrolls = true; break; }
      p = p.parentElement;
    }
    const cls = typeof el.className === 'string' && el.className
                ? '.' + el.className.split(' ').join('.') : '';
    if (!scrolls) offenders.push(el.tagName.toLowerCase() + cls + ' right=' + Math.round(r.right));
  }
  const scrolling = [...main.querySelectorAll('mjx-container[display="true"]')]
    .filter(e => e.scrollWidth > e.clientWidth + 1).length;
  return {scrollWidth: document.documentElement.scrollWidth, clientWidth: vw,
          offenders: offenders.slice(0, 8), scrollingEquations: scrolling};
}"""


def check_links(base: str, page_url: str, hrefs: list[str]) -> list[str]:
    """Internal links must name an existing file and, with a #fragment, an existing id on it."""
    bad = []
    for href in sorted(set(hrefs)):
        if href.startswith(("mailto:", "javascript:")) or urlparse(href).scheme in ("http", "https") \
                and not href.startswith(base):
            continue
        target, fragment = urldefrag(urljoin(page_url, href))
        rel = urlparse(target).path.lstrip("/") or "index.html"
        path = HTML / rel
        if path.is_dir():
            path = path / "index.html"
        if not path.is_file():
            bad.append(f"link to a missing file: {href}")
            continue
        if fragment and path.suffix == ".html":
            text = path.read_text(errors="replace")
            if not re.search(rf'id=["\']{re.escape(fragment)}["\']', text):
                bad.append(f"link to a missing anchor: {href}")
    return bad


# Each exercise's solution (a dropdown admonition titled "Solution") as the reader first meets
# it: folded, its code not drawn (sphinx-togglebutton keeps it laid out but hidden, a visibility
# its children inherit), its title in view.
SOLUTIONS_JS = """() => [...document.querySelectorAll('main div.admonition.dropdown')]
  .filter(a => (a.querySelector('.admonition-title') || {}).textContent.trim() === 'Solution')
  .map(a => { const pre = a.querySelector('pre'); const r = pre ? pre.getBoundingClientRect() : null;
              const t = a.querySelector('.admonition-title').getBoundingClientRect();
              return {codeShown: !!(pre && pre.offsetParent !== null && r.height > 0
                                    && getComputedStyle(pre).visibility === 'visible'),
                      titleShown: t.height > 0}; })"""


OPEN_SOLUTIONS_JS = """() => [...document.querySelectorAll('main div.admonition.dropdown')]
  .map(a => a.querySelector('.admonition-title'))
  .filter(t => t && t.textContent.trim() === 'Solution').forEach(t => t.click())"""


def solution_failures(found: list) -> list[str]:
    """A solution drawn open, or one whose title (the reader's way to open it) is not drawn."""
    return [f"exercise solution {k + 1} is {'open' if s['codeShown'] else 'without its title'}"
            for k, s in enumerate(found) if s["codeShown"] or not s["titleShown"]]


@pytest.mark.parametrize("rel", book_pages() or ["(no built pages)"])
def test_page(rel, server, browser):
    url = urljoin(server, rel)
    failures = []
    info = {"images": 0, "without_alt_text": 0, "animations": 0, "math": 0,
            "equations_scrolling_at_390px": 0}
    SHOTS.mkdir(parents=True, exist_ok=True)
    for width in WIDTHS:
        page, problems = open_page(browser, url, width)
        failures += [f"[{width}] {p}" for p in problems]
        failures += width_failures(rel, width, page.evaluate(WIDTH_JS))
        failures += [f"[{width}] {f}" for f in solution_failures(page.evaluate(SOLUTIONS_JS))]
        if width == "desktop":   # and a click on its title opens it
            page.evaluate(OPEN_SOLUTIONS_JS)
            page.wait_for_timeout(300)
            failures += [f"exercise solution {k + 1} does not open on a click"
                         for k, s in enumerate(page.evaluate(SOLUTIONS_JS)) if not s["codeShown"]]
        if width == "desktop":
            found = page.evaluate(CHECK_JS)
            info.update(images=len(found["images"]), animations=len(found["anims"]), math=found["math"],
                        without_alt_text=sum(not img["described"] for img in found["images"]))
            for img in found["images"]:
                if not img["complete"] or img["natural"] == 0:
                    failures.append(f"image did not load: {img['src']}")
                elif not img["hidden"] and (img["w"] == 0 or img["h"] == 0):
                    failures.append(f"image drawn with zero size: {img['src']}")
            failures += [f"math not rendered: {m}" for m in found["rawMath"]]
            failures += [f"literal backtick in prose: {t}" for t in found["backticks"]]
            failures += [f"a Python repr in prose: {t}" for t in found["reprs"]]
            failures += [f"glued value in bold where the prose is not: {t}" for t in found["boldGlue"]]
            failures += [f"TeX outside maths: {t}" for t in found["tex"]]
            if zoom_blocked(found["viewport"]):
                failures.append(f"the page disables zoom (viewport {found['viewport']!r}): a "
                                f"figure's detail is no longer a pinch away")
            for k, anim in enumerate(found["anims"]):
                if not (anim["frame"] > 0 and anim["slider"] and anim["buttons"] >= 8
                        and anim["drawnButtons"] == anim["buttons"] and anim["icons"] == anim["buttons"]):
                    failures.append(f"animation {k} lacks its frame or controls: {anim}")
            failures += check_links(server, url, found["links"])
            if not found["download"]:
                failures.append("no download button (a link to the page's source in _sources/)")
        else:
            over = page.evaluate(OVERFLOW_JS)
            info["equations_scrolling_at_390px"] = over["scrollingEquations"]
            if over["scrollWidth"] > over["clientWidth"] + 1 or over["offenders"]:
                failures.append(f"horizontal overflow at {WIDTHS[width][0]} px: page "
                                f"{over['scrollWidth']} px wide; {over['offenders']}")
        name = rel.replace("/", "__").removesuffix(".html")
        page.screenshot(path=str(SHOTS / f"{name}-{width}.png"), full_page=True)
        page.close()
    SUMMARY[rel] = {"result": "FAIL" if failures else "ok", **info, "failures": failures}
    assert not failures, f"{rel}:\n  " + "\n  ".join(failures)
