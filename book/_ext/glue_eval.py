"""The ``{eval}`` role of the book's prose, read from stored outputs (a local Sphinx extension).

The prose names a glued value as ``{eval}`glue["name"]``` (``grpo.book.glued``): JupyterLab
evaluates that expression in the kernel (jupyterlab-myst), and the book, which executes nothing,
pastes the value the notebook stored when it glued ``name``: what myst-nb's ``{glue:text}`name```
pastes, or ``{glue:md}`name``` for a value glued as Markdown. The page is the same as before the
prose used ``{eval}``. Any other expression is a build error, so the book never shows an
expression it cannot read from the stored outputs. This replaces myst-nb's own ``eval`` role,
which needs the notebooks executed during the build.
"""
import re

from myst_nb.ext.glue.roles import PasteMarkdownRole, PasteTextRole
from myst_nb.ext.glue.utils import glue_warning, retrieve_glue_data
from myst_nb.core.variables import RetrievalError
from myst_nb.ext.utils import RoleBase

GLUED = re.compile(r"""\s*glue\[\s*(["'])([^"'\\]+)\1\s*\]\s*""")


class GluedValueRole(RoleBase):
    """``{eval}`glue["name"]```: the stored glue output ``name`` as inline text (or markdown)."""

    def __call__(self, name, rawtext, text, lineno, inliner, options=None, content=()):
        self.lineno = lineno
        return super().__call__(name, rawtext, text, lineno, inliner, options, content)

    def run(self):
        found = GLUED.fullmatch(self.text)
        if not found:
            why = f'{{eval}} reads only glue["name"] in the book, got {self.text!r}'
            return [], [glue_warning(why, self.document, self.line)]
        key = found.group(2)
        try:
            data = retrieve_glue_data(self.document, key).data
        except RetrievalError as exc:
            return [], [glue_warning(str(exc), self.document, self.line)]
        paste = PasteMarkdownRole() if "text/markdown" in data else PasteTextRole()
        return paste("glue", self.rawtext, key, self.lineno, self.inliner)


def _replace_myst_nb_eval(app):
    app.add_role("eval", GluedValueRole(), override=True)


def setup(app):
    # after every extension's setup, so that myst-nb's own ``eval`` role is the one replaced
    app.connect("builder-inited", _replace_myst_nb_eval)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
