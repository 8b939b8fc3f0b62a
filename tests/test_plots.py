import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")

from grpo import lava, plots  # noqa: E402


def test_animation_html_has_a_stable_id_per_name():
    floor = lava.test_floors()[0]
    run = lava.play(floor, np.zeros((4, 2)), np.random.default_rng(0))
    a = plots.animation_html(plots.animate_run(floor, run), "demo").data
    b = plots.animation_html(plots.animate_run(floor, run), "demo").data
    c = plots.animation_html(plots.animate_run(floor, run), "other").data
    assert a == b and a != c
    assert "_anim_img" in a
    anim = plots.animate_run(floor, run)
    with pytest.raises(ValueError, match="name"):
        plots.animation_html(anim, "")
    anim.to_jshtml()          # drawn, so matplotlib does not warn about an unused animation
