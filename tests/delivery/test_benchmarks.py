"""Smoke test of benchmarks/: the code runs at tiny sizes and writes valid JSON (times nothing)."""
from __future__ import annotations

import json

import nbformat
import pytest

from _support import REPO
from benchmarks import _common, course, hub, kv_heads, latency, scale


def test_table_and_percentiles():
    text = _common.table(["a", "bb"], [[1, "x"], ["long", 2]])
    lines = text.splitlines()
    assert len(lines) == 4 and all(line.startswith("| ") for line in lines)
    assert _common.median([3, 1, 2]) == 2
    assert _common.p95(list(range(1, 101))) == 95
    assert _common.p95([7.0]) == 7.0


def test_latency_walk_moves_every_step():
    path = latency._walk([1, 2, 3], 1, 7)
    assert path == [2, 3, 2, 1, 2, 3, 2]
    assert all(a != b for a, b in zip([1] + path, path))
    assert latency._walk([5], 5, 3) == []


def test_latency_quick_writes_json(tmp_path):
    payload = latency.run(quick=True, results=tmp_path)
    data = json.loads((tmp_path / "latency.json").read_text())
    assert data["rows"] and data["rows"][0]["explorer"].startswith("scaling")
    row = data["rows"][0]
    assert row["moves"] == 5 and 0 < row["median_ms"] <= row["p95_ms"] <= row["max_ms"]
    assert payload["table"].startswith("| explorer")
    assert any(n.startswith("efficiency") for n in latency.builders())  # module explorers too


@pytest.mark.parametrize("method", scale.LAYER_METHODS)
def test_scale_worker_runs_every_layer_method(method):
    cfg = {"kind": "layer", "method": method, "L": 8, "B": 2, "E": 16, "H": 2, "repeats": 2}
    r = scale.run_worker(cfg)
    assert len(r["times_s"]) == 2 and r["median_s"] > 0 and r["peak_growth_mib"] >= 0
    assert r["memory_method"] in ("VmHWM after clear_refs", "ru_maxrss")


@pytest.mark.parametrize("method", scale.HEAD_METHODS)
def test_scale_worker_runs_every_head_method(method):
    r = scale.run_worker({"kind": "head", "method": method, "L": 32, "D": 8, "causal": True, "repeats": 1})
    assert r["median_s"] > 0


def test_scale_timing_takes_turns():
    r = scale.run_timing({"L": 8, "B": 1, "E": 16, "H": 2, "methods": ["sdpa", "teaching"],
                          "min_rounds": 2, "max_rounds": 2})
    assert r["rounds"] == 2 and all(len(t) == 2 for t in r["times_s"].values())
    assert set(r["median_s"]) == {"sdpa", "teaching"} and min(r["min_s"].values()) > 0


def test_scale_quick_writes_json(tmp_path):
    # one configuration of each kind, each in its own subprocess as in the real run
    scale.run(quick=True, results=tmp_path, lengths=[16], methods=("blockwise",),
              head_methods=("naive",), long_L=64)
    data = json.loads((tmp_path / "scale.json").read_text())
    assert [r["method"] for r in data["layer"]] == ["blockwise"]
    for r in data["layer"] + data["head"]:
        assert "error" not in r, r
        assert r["median_s"] > 0 and r["peak_growth_mib"] >= 0
    assert data["accuracy"]["layer_causal_max_abs_diff"] < 1e-5
    assert data["accuracy"]["long_causal_max_abs_diff"] < 1e-5
    assert any("blockwise vs SDPA" in t for t in data["summary"]["targets"])
    small = [t for t in data["summary"]["targets"] if t.startswith("a toy sentence (04), inference")]
    assert len(small) == 1 and "ms per call (target <= +0.3 ms: " in small[0]
    assert data["config"]["teaching_target"] == {"ratio": 1.5, "extra_ms": 0.3, "small_E": 32, "max_L": 128}


def _course_row(label, E, inference_us, training_us):
    return {"label": label, "B": 1, "L": 10, "E": E, "H": 2,
            "inference_teaching_us": inference_us[0], "inference_torch_weights_us": inference_us[1],
            "inference_ratio": inference_us[0] / inference_us[1],
            "training_teaching_us": training_us[0], "training_torch_weights_us": training_us[1],
            "training_ratio": training_us[0] / training_us[1]}


def test_scale_reports_each_course_row_against_the_bound_that_applies():
    # E = 32 in inference: at most 0.3 ms more per call; elsewhere at most 1.5 times
    payload = {"layer": [], "head": [], "accuracy": {"layer_causal_max_abs_diff": 0.0, "core_max_abs_diff": 0.0,
                                                     "long_causal_max_abs_diff": 0.0, "long_L": 64},
               "course_sizes": [
                   _course_row("small, close", 32, (450.0, 200.0), (1400.0, 1000.0)),  # 2.25x but +0.25 ms
                   _course_row("small, far", 32, (560.0, 200.0), (1600.0, 1000.0)),  # +0.36 ms; training 1.6x
                   _course_row("large", 512, (1400.0, 1000.0), (4000.0, 3000.0)),  # +0.4 ms but 1.4x
                   _course_row("large, slow", 512, (1600.0, 1000.0), (4000.0, 3000.0)),  # 1.6x
               ]}
    targets = [t for t in scale.summarise(payload)["targets"] if ": teaching" in t]
    assert targets == [
        "small, close, inference: teaching - nn.MultiheadAttention(need_weights=True) = +0.25 ms per call "
        "(target <= +0.3 ms: met)",
        "small, close, training: teaching / nn.MultiheadAttention(need_weights=True) = 1.40x (target <= 1.5x: met)",
        "small, far, inference: teaching - nn.MultiheadAttention(need_weights=True) = +0.36 ms per call "
        "(target <= +0.3 ms: MISSED)",
        "small, far, training: teaching / nn.MultiheadAttention(need_weights=True) = 1.60x (target <= 1.5x: MISSED)",
        "large, inference: teaching / nn.MultiheadAttention(need_weights=True) = 1.40x (target <= 1.5x: met)",
        "large, training: teaching / nn.MultiheadAttention(need_weights=True) = 1.33x (target <= 1.5x: met)",
        "large, slow, inference: teaching / nn.MultiheadAttention(need_weights=True) = 1.60x "
        "(target <= 1.5x: MISSED)",
        "large, slow, training: teaching / nn.MultiheadAttention(need_weights=True) = 1.33x (target <= 1.5x: met)",
    ]
    table = scale.summarise(payload)["course_table"].splitlines()
    assert "forward against its target" in table[0]
    assert "+0.25 ms per call (target <= +0.3 ms: met)" in table[2] and "1.40x (target <= 1.5x: met)" in table[2]


def test_report_states_the_teaching_bounds_when_the_results_have_them():
    from benchmarks import report

    d = json.loads((_common.RESULTS / "scale.json").read_text(encoding="utf-8"))
    d["config"].pop("teaching_target", None)
    assert "Target: at most" not in report.scale_section(d)  # results written before the two bounds
    d["config"]["teaching_target"] = {"ratio": 1.5, "extra_ms": 0.3, "small_E": 32, "max_L": 128}
    assert ("Target: at most 0.3 ms more per call than torch at E = 32 in inference"
            in report.scale_section(d))
    assert "at most 1.5× its time elsewhere." in report.scale_section(d)


def test_kv_heads_quick_measures_every_configuration_and_its_cache_bytes(tmp_path):
    payload = kv_heads.run(quick=True, results=tmp_path)
    rows = payload["rows"]
    assert [(r["T"], r["kv_heads"], r["window"]) for r in rows] == [
        (T, h, w) for T in (64, 256) for w in (None, 128) for h in (8, 2, 1)]
    for r in rows:  # E = 512, H = 8: D = 64; float32: 4 bytes
        assert r["kept"] == min(r["T"], r["window"] or r["T"])
        assert r["cache_bytes"] == 2 * r["kept"] * r["kv_heads"] * 64 * 4
        assert 0 < r["fastest_ms"] <= r["step_ms"]
    assert payload["summary"][0] == "cache bytes = 2 · min(T, W) · H_kv · D · 4 in every row: yes"
    assert "T=256: MQA's cache is 8x smaller than MHA's (0.12 MiB against 1.00 MiB)" in payload["summary"][1]
    assert not (tmp_path / "kv_heads.json").exists()  # a quick run writes no results
    from benchmarks import report

    section = report.kv_heads_section(payload)
    assert section.startswith("**KV heads and a window**") and payload["table"] in section


def test_course_times_a_notebook(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("print(6 * 7)")]
    nb.cells[0].outputs = [nbformat.v4.new_output("stream", name="stdout", text="42\n")]
    nb.cells[0].execution_count = 1
    path = tmp_path / "tiny.ipynb"
    nbformat.write(nb, path)
    out = tmp_path / "results"
    course.run(results=out, notebooks=[path], whole=False, baseline=False)
    data = json.loads((out / "course.json").read_text())
    assert data["notebooks"][0]["ok"] and data["notebooks"][0]["seconds"] > 0
    assert data["notebooks"][0]["notebook"] == "tiny.ipynb"


def test_browser_lists_only_notebooks_that_show_widgets(tmp_path):
    from benchmarks import browser

    plain = nbformat.v4.new_notebook()
    plain.cells = [nbformat.v4.new_code_cell("1")]
    live = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("w")
    cell.outputs = [nbformat.v4.new_output(
        "display_data", data={"application/vnd.jupyter.widget-view+json": {"model_id": "x"},
                              "text/plain": "w"})]
    live.cells = [cell]
    nbformat.write(plain, tmp_path / "a.ipynb")
    nbformat.write(live, tmp_path / "b.ipynb")
    assert browser._with_widgets(tmp_path) == ["b.ipynb"]


def test_performance_guide_shows_the_report_of_the_committed_results():
    from benchmarks import report

    assert report.PAGE == REPO / "docs" / "performance.md"
    page = report.PAGE.read_text(encoding="utf-8")
    start, end = page.index(report.START), page.index(report.END)
    shown = page[start + len(report.START):end].strip()
    assert shown == report.render(_common.RESULTS).strip(), (
        "docs/performance.md's tables differ from benchmarks/results/*.json: "
        "run `python -m benchmarks.report --write`")


def test_report_writes_between_the_markers_and_keeps_the_rest(tmp_path):
    from benchmarks import report

    page = tmp_path / "performance.md"
    page.write_text(f"# Performance\n\n{report.START}\nold\n{report.END}\n\nprose\n", encoding="utf-8")
    report.write_page(page, "tables")
    assert page.read_text(encoding="utf-8") == f"# Performance\n\n{report.START}\ntables\n{report.END}\n\nprose\n"


def test_report_needs_the_markers(tmp_path):
    from benchmarks import report

    page = tmp_path / "performance.md"
    page.write_text("# no markers here\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"page: expected the markers <!-- bench:start -->"):
        report.write_page(page, "tables")


def test_report_of_missing_results_says_so(tmp_path):
    from benchmarks import report

    text = report.render(tmp_path)
    assert text.count("no results yet") == len(report.SECTIONS)


def test_latency_moves_a_combobox_through_its_suggestions():
    import ipywidgets as widgets

    box = widgets.Combobox(value="a", options=["a", "b", "c"])
    assert latency._positions(box) == ("value", ["a", "b", "c"])
    with pytest.raises(TypeError, match="no way to move a Combobox"):
        latency._positions(widgets.Combobox(value="a", options=["a"]))


def test_latency_types_into_a_text_box_and_back():
    import ipywidgets as widgets

    assert latency._positions(widgets.Text(value="a b")) == ("value", ["a b", "a b again"])


# --- the hub benchmark (benchmarks/hub.py) ---------------------------------------------------

HUB_FIGURES = REPO / "benchmarks" / "results" / "hub.json"


def test_z2jh_cpu_guarantee_fits_the_measured_class():
    """Learners per core the guarantee lets a node take (deploy/hub/z2jh-config.yaml): no more than the
    measured rule allows for every move under the target (benchmarks.hub.estimate_largest_class)."""
    yaml = pytest.importorskip("yaml")  # PyYAML: a dependency of jupyter_events, so of Lab
    z2jh = yaml.safe_load((REPO / "deploy" / "hub" / "z2jh-config.yaml").read_text(encoding="utf-8"))
    figures = json.loads(HUB_FIGURES.read_text(encoding="utf-8"))
    per_core = hub.estimate_largest_class(figures) / figures["machine"]["cpu_count"]
    assert 1 / float(z2jh["singleuser"]["cpu"]["guarantee"]) <= per_core, (z2jh["singleuser"]["cpu"], per_core)


def test_teaching_guide_shows_the_measured_hub_figures():
    figures = json.loads(HUB_FIGURES.read_text(encoding="utf-8"))
    assert hub.PAGE == REPO / "docs" / "teaching.md"
    page = hub.PAGE.read_text(encoding="utf-8")
    block = page.split("<!-- hub:start -->\n", 1)[1].split("\n<!-- hub:end -->", 1)[0]
    assert block == hub.figures_block(figures), (
        "docs/teaching.md's hub figures differ from benchmarks/results/hub.json: "
        "run `python -m benchmarks.hub --write-docs`")


def test_hub_figures_are_written_between_their_markers(tmp_path):
    figures = json.loads(HUB_FIGURES.read_text(encoding="utf-8"))
    page = tmp_path / "teaching.md"
    page.write_text("# Teaching\n\n<!-- hub:start -->\nold\n<!-- hub:end -->\n\nprose\n", encoding="utf-8")
    hub.write_page(figures, page)
    assert page.read_text(encoding="utf-8") == (
        f"# Teaching\n\n<!-- hub:start -->\n{hub.figures_block(figures)}\n<!-- hub:end -->\n\nprose\n")
    page.write_text("# no markers here\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no <!-- hub:start --> ... <!-- hub:end --> block"):
        hub.write_page(figures, page)


def test_benchmark_bisects_between_the_largest_served_class_and_the_next():
    served = {1: True, 5: True, 10: True, 20: False, 15: False, 12: True}
    done: list[dict] = []
    for n in hub._sizes_to_measure((1, 5, 10, 20), done, search=2):
        done.append({"learners": n, "served": served[n]})
    assert [r["learners"] for r in done] == [1, 5, 10, 20, 15, 12]
    done = []
    for n in hub._sizes_to_measure((1, 5), done, search=2):  # every size served: nothing to bisect
        done.append({"learners": n, "served": True})
    assert [r["learners"] for r in done] == [1, 5]
