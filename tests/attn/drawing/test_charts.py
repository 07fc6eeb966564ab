"""attn.drawing.charts: the lessons' line charts draw what they return (their words in every language
are tested in test_package_language.py, their styles without colour in test_colour_vision.py)."""
from attn.drawing.charts import STYLE, loglog_curves, plot_gradient_profile, plot_path_counts, plot_warmup_runs
from attn.drawing.plotting import new_figure
from attn.lessons.rnn_vs_attention import gradient_profile, path_counts


def test_plots_draw_what_they_return():
    fig = new_figure(8, 3)
    ax1, ax2 = fig.subplots(1, 2)
    rows = [path_counts(n) for n in (2, 4, 8)]
    lines = plot_path_counts(rows, ax1)
    assert len(lines) == 4 and list(lines[0].get_ydata()) == [2, 4, 8]
    p = gradient_profile(n=8, d=4)
    lines = plot_gradient_profile(p, ax2)
    assert list(lines[0].get_ydata()) == list(p.rnn)
    assert ax2.get_yscale() == "log"
    fig.canvas.draw()
    labels = {t.get_text() for t in ax2.get_yticklabels()} - {""}
    assert labels and all(t.startswith("10") and "$" not in t for t in labels)


def test_loglog_curves_draw_one_line_per_method_and_the_reference_slope():
    ax = new_figure(4, 3).add_subplot()
    lines = loglog_curves(ax, [64, 128, 256], {"naive": [1.0, 4.0, 16.0], "sdpa": [1.0, 2.0, 4.0]}, unit=10.0)
    assert [line.get_color() for line in lines[:2]] == [STYLE["naive"][1], STYLE["sdpa"][1]]
    assert list(lines[0].get_ydata()) == [10.0, 40.0, 160.0]
    assert list(lines[2].get_ydata()) == [10.0, 40.0, 160.0]  # slope 2 through naive's last point
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"


def test_plot_warmup_runs_draws_one_line_per_run_and_shades_the_warm_up():
    from attn.language import language
    from attn.lessons.trained.warmup import WarmupRun

    runs = [WarmupRun(nf, w, [2.0, 1.0 + nf, 0.5, 0.25], 0.5) for nf in (False, True) for w in (0, 2)]
    with language("zh"):
        ax = new_figure(5, 3).add_subplot()
        lines = plot_warmup_runs(runs, ax)
    assert [list(line.get_ydata()) for line in lines] == [r.losses for r in runs]
    assert list(lines[0].get_xdata()) == [1, 2, 3, 4]
    styles = {(line.get_color(), line.get_linestyle()) for line in lines}
    assert len(styles) == 4  # each run apart, and apart without colour: solid against dashed
    assert [line.get_linestyle() for line in lines] == ["-", "--", "-", "--"]
    assert [line.get_label() for line in lines] == ["后置归一化，不预热", "后置归一化，预热 2 步", "前置归一化，不预热",
                                                    "前置归一化，预热 2 步"]
    assert ax.get_xlabel() == "训练步数" and len(ax.patches) == 1  # the warm-up's span
