"""Two fixes to the HTML that Jupyter Book 1 builds (a local Sphinx extension, see _config.yml).

* Launch buttons and the repository link only when the repository is known. `_config.yml` names
  the launch services (Binder, Colab) once, and `repository.url` says where the notebooks live.
  Until that URL is set, sphinx-book-theme would crash building the links, so the launch buttons
  are dropped and the build goes on with no warning; the download buttons stay. Once it is set,
  the header links the repository too.
* Figure numbers per chapter. Sphinx numbers figures through the whole book (chapter 6 would
  start at Fig. 28); each page's figures are renumbered from 1, behind its chapter's number, so
  chapter 6's first figure is Fig. 6.1 and a page outside `chapters/` counts Fig. 1, 2, ...
* Each script once. sphinx-thebe registers its inline configuration script each time Sphinx reads
  the sources, and a build that reads twice (sphinxcontrib-bibtex asks for a second pass) puts
  `const THEBE_JS_URL = ...` on every page twice: a JavaScript error in every browser. Identical
  script entries are dropped from each page.
* No CDN for the animation players. matplotlib's ``to_jshtml()`` links Font Awesome 4 from a CDN
  for its buttons' icons; the theme's bundled Font Awesome already draws them, so the link is
  removed from the built pages and the site makes no request to another host.
"""
import re
from pathlib import Path

_FA4_CDN = re.compile(r'<link rel="stylesheet"\s+href="https://maxcdn\.bootstrapcdn\.com/font-awesome/'
                      r'[0-9.]+/css/font-awesome\.min\.css">\s*')


def _launch_guard(app, config):
    options = dict(config.html_theme_options or {})
    if not str(options.get("repository_url") or "").strip():
        options.pop("launch_buttons", None)
    else:
        options["use_repository_button"] = True
    config.html_theme_options = options


def _chapter_number(docname: str) -> tuple[int, ...]:
    """``chapters/06_lunar_lander`` -> (6,); a page outside chapters/ has no prefix."""
    found = re.match(r"chapters/(\d+)_", docname)
    return (int(found.group(1)),) if found else ()


def _figure_numbers_per_chapter(app, env):
    """Renumber each page's figures 1, 2, ... in page order, behind the chapter's number."""
    renumbered = []
    for docname, kinds in env.toc_fignumbers.items():
        for numbers in kinds.values():
            in_page_order = sorted(numbers, key=numbers.get)
            new = {fig: (*_chapter_number(docname), k) for k, fig in enumerate(in_page_order, 1)}
            if new != numbers:
                numbers.update(new)
                renumbered.append(docname)
    return renumbered


def _scripts_once(app, pagename, templatename, context, doctree):
    seen, unique = set(), []
    for script in context.get("script_files", []):
        if not hasattr(script, "attributes"):              # a plain string entry
            unique.append(script)
            continue
        attributes = tuple(sorted(script.attributes.items()))
        key = (str(script.filename or ""), script.priority, attributes)
        if key not in seen:
            seen.add(key)
            unique.append(script)
    context["script_files"] = unique


def _no_cdn_links(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    for page in Path(app.outdir).rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        if "font-awesome" in text:
            page.write_text(_FA4_CDN.sub("", text), encoding="utf-8")


def setup(app):
    app.connect("config-inited", _launch_guard)
    app.connect("env-get-updated", _figure_numbers_per_chapter, priority=900)   # after Sphinx's
    app.connect("html-page-context", _scripts_once, priority=900)
    app.connect("build-finished", _no_cdn_links)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
