"""The site checks of tests/site_lessons.py can fail: each fault is planted in a small page and
caught, and a clean page passes. (The checks themselves run over _build/html in `make browser`.)"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import site_lessons as S  # noqa: E402

PNG = "data:image/png;base64,iVBORw0KGgo="
FIGURE = ('<figure><img src="{src}" alt="{alt}"><figcaption><span class="caption-number">Fig. 8.1 '
          '</span>The green line rises.</figcaption></figure>')
VISIBLE = '<div class="cell"><div class="cell_input"><pre>{code}</pre></div></div>'
HIDDEN = ('<div class="cell"><details class="hide above-input"><div class="cell_input"><pre>{code}'
          '</pre></div></details></div>')
SOLUTION = ('<div class="admonition {cls}"><p class="admonition-title">Solution</p>'
            '<pre>def f(): pass</pre></div>')


def page(*parts):
    return "<html><body><main><article>" + "".join(parts) + "</article></main></body></html>"


def test_a_clean_page_passes():
    html = page(FIGURE.format(src=PNG, alt="a line of accuracy against iteration"),
                VISIBLE.format(code="loss = grpo_loss(logp, old, ref, mask, r)"),
                HIDDEN.format(code='glue("lift", str(x))\nRETRAIN = False\nmarkdown_table(h, rows)'),
                '<section id="exercises">', SOLUTION.format(cls="dropdown"),
                SOLUTION.format(cls="dropdown"), "</section>",
                '<div class="cell_output"><pre>iteration 1 reward 0.5</pre></div>')
    assert S.page_faults(html) == []


def test_an_image_without_a_numbered_caption_or_with_a_file_name_for_alt_is_caught():
    bare = page(f'<img src="{PNG}" alt="a chart of the reward">')
    assert S.image_faults(bare) == [f"image {PNG[:60]}: no caption"]
    unnumbered = page(f'<figure><img src="{PNG}" alt="a chart of the reward"><figcaption>The '
                      'reward.</figcaption></figure>')
    assert S.image_faults(unnumbered)[0].endswith("its figure has no number")
    named = page(FIGURE.format(src=PNG, alt="../_images/4be95fcb.png"))
    assert "does not say what it shows" in S.image_faults(named)[0]
    animation = page('<img id="_anim_img0123">')             # a jshtml player's frame, no alt
    assert len(S.image_faults(animation)) == 2


def test_visible_plumbing_is_caught_and_hidden_plumbing_is_not():
    for line in ('glue("lift", str(x), display=False)', "markdown_table(header, rows)",
                 'save_results("08_grpo_math", {})', "RETRAIN = False",
                 "runs = main_runs.load_stored(jobs)", 'display(Markdown("| a |"))'):
        assert S.plumbing_faults(page(VISIBLE.format(code=line))), line
        assert S.plumbing_faults(page(HIDDEN.format(code=line))) == [], line
    assert S.plumbing_faults(page(VISIBLE.format(code="# RETRAIN is in the cell above"))) == []


def test_printed_paths_and_raw_dicts_are_caught():
    for text in ("wrote data/results/01_lava_leap.json", "23 runs read from data/runs/10_x/",
                 "{'expr': '47+14', 'claimed': '48'}"):
        out = page(f'<div class="cell_output"><pre>{text}</pre></div>')
        assert S.printed_path_faults(out), text


def test_an_open_solution_and_a_wrong_number_of_exercises_are_caught():
    open_one = page('<section id="exercises">', SOLUTION.format(cls="note"),
                    SOLUTION.format(cls="dropdown"), "</section>")
    assert S.solution_faults(open_one) == ["an exercise's solution is not folded (no dropdown class)"]
    one = page('<section id="exercises">', SOLUTION.format(cls="dropdown"), "</section>")
    assert S.solution_faults(one) == ["1 exercises with solutions (two or three a chapter)"]
