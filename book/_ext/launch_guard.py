"""Launch buttons only when the repository is known.

`_config.yml` names the launch services (Binder, Colab) once, and `repository.url` says where
the notebooks live. Until that URL is set, sphinx-book-theme would crash building the links, so
this drops the launch buttons and the build goes on with no warning; the download buttons stay.
"""


def _guard(app, config):
    options = dict(config.html_theme_options or {})
    if not str(options.get("repository_url") or "").strip():
        options.pop("launch_buttons", None)
        config.html_theme_options = options


def setup(app):
    app.connect("config-inited", _guard)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
