"""The HTML report: self-contained, opened in headless Chromium, every chart drawn.

Chromium is Debian's ``chromium`` package (``make browser-check`` installs it);
without it the browser test skips, naming that command. ``DYNSHAPE_HTML`` names
an extra report to check the same way (``make browser-check`` passes the
latest run's).
"""

import os
import re
import shutil
import subprocess

import pandas as pd
import pytest
from synthetic import frame, job

from harness import cli, results
from harness import html_report as html

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

#: injected ahead of everything: records resources that fail to load, then on
#: load decodes every image and writes the verdict into the DOM
#: one window size for every probe and screenshot: a laptop's first screen
WINDOW = (1280, 800)
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--hide-scrollbars",
    f"--window-size={WINDOW[0]},{WINDOW[1]}",
    "--virtual-time-budget=20000",
)
PROBE = """<script>
window.__failed = [];
window.addEventListener('error', e => { __failed.push((e.target && (e.target.src || e.target.href)) || String(e.message)); }, true);
window.addEventListener('load', () => {
  // at load every image has loaded or failed: a decoded one has its pixel size
  const imgs = [...document.images];
  const bad = imgs.filter(img => !(img.complete && img.naturalWidth > 0 && img.naturalHeight > 0)).map(img => img.alt);
  // an inline SVG chart is drawn when it has a size on the page and its marks have one inside it
  const charts = [...document.querySelectorAll('svg.chart')];
  const blank = charts.filter(c => {
    const r = c.getBoundingClientRect(), b = c.getBBox();
    return !(r.width > 100 && r.height > 50 && b.width > 100 && c.querySelectorAll('polyline,rect,circle').length > 1);
  }).map(c => c.getAttribute('aria-label'));
  // the leaderboard as laid out: each row's cells as the reader sees them, and whether it has a size
  const board = [...document.querySelectorAll('table.leaderboard tr')].map(tr => [...tr.cells].map(c => c.innerText));
  const lb = document.querySelector('table.leaderboard');
  const boardShown = !!lb && lb.getBoundingClientRect().width > 100 && lb.getBoundingClientRect().height > 20;
  // the first screen: each mode's answer table, where it lies and what it says
  const answer = [...document.querySelectorAll('table.answer')].map(t => ({
    mode: t.parentElement.querySelector('h3').innerText, bottom: t.getBoundingClientRect().bottom,
    rows: [...t.rows].map(tr => [...tr.cells].map(c => c.innerText)),
    colours: [...t.rows].slice(1).map(tr => getComputedStyle(tr.cells[1]).backgroundColor)}));
  const out = document.createElement('pre');
  out.id = 'probe';
  out.textContent = 'PROBE ' + JSON.stringify({images: imgs.length, undecoded: bad, charts: charts.length,
                                                blank: blank, failed: __failed, board: board, boardShown: boardShown,
                                                answer: answer, height: window.innerHeight});
  document.body.appendChild(out);
});
</script>"""


def _fixture_records():
    reasons = {i: [f"x: new input shapes (({1000 + i}, 8),)"] for i in range(4)}
    return frame(
        job("gnn_edge_divide", "torch_eager", "unbounded", [5e-4, 4e-5, 3e-5, 3e-5], [7e-6] * 4, [0, 0, 0, 0]),
        job("gnn_edge_divide", "einx", "static", [1.2, 0.02, 0.02, 0.02], [4e-5] * 4, [1, 2, 3, 4], reasons=reasons),
        job("gnn_edge_divide", "einx_symbolic", "unbounded", [6e-4, 1e-4, 3e-5, 3e-5], [8e-6] * 4, [1, 1, 1, 1]),
        [
            results.record(
                run_id="r",
                case="gnn_edge_divide",
                backend="jax_jit",
                mode="unbounded",
                status="unsupported",
                message="jax_jit offers no unbounded mode",
            )
        ],
    )


def test_report_is_self_contained_with_the_plots_of_each_case():
    page = html.render(_fixture_records(), rules=[])
    # every image is embedded; nothing is fetched
    charts = re.findall(r'<svg class="chart".*?</svg>', page, re.S)
    assert len(charts) == 4 and "<img" not in page
    assert not re.search(r'(src|href)="(?!data:)', page) and "<script" not in page
    # every point says what it is (a tooltip): job, shape, value in units
    assert "<title>einx/static: 1 → 20.0 ms</title>" in page
    assert "gnn_edge_divide: first-call latency per novel shape" in page
    assert "gnn_edge_divide: cached latency per shape with its IQR" in page
    assert "gnn_edge_divide: cumulative compiles against shapes seen" in page
    assert "gnn_edge_divide: cached latency relative to torch eager" in page
    # the matrix: a cell per job, coloured by status, its note and tooltip
    assert 'title="einx/static on gnn_edge_divide: pass — no rule; shape 1: x: new input shapes ((1001, 8),)"' in page
    # a cell shows its job's compile count; a column no case supports is left out of the matrix
    assert "pass (no rule)<small>4 compiles; no rule; shape 1</small>" in page
    assert "jax_jit/unbounded on gnn_edge_divide" not in page and "<div>jax_jit/unbounded</div>" not in page
    # the leaderboard heads the report
    assert page.index("<h2>Leaderboard</h2>") < page.index("<h2>Conformance matrix</h2>")
    # the compile patterns by family: einx compiled on every novel shape
    family = page.split("<h2>Compile patterns by case family</h2>", 1)[1].split("<h2", 1)[0]
    assert re.search(r"<th>einx/static</th>\s*<td>per shape 1</td>", family), family


def test_the_tables_show_units_dispersion_and_why_a_value_is_missing():
    recs = _fixture_records()
    # a second process of einx/static: the novel sweep gets a min–max
    more = recs[(recs["backend"] == "einx") & (recs["novel"] == True)].assign(  # noqa: E712
        process=1, latency_s=lambda d: d["latency_s"] * 1.1
    )
    recs.loc[(recs["backend"] == "einx_symbolic") & (recs["novel"] == False), "cached_latency_s"] = 1.53e-5  # noqa: E712
    page = html.render(pd.concat([recs, more], ignore_index=True), rules=[])
    tables = "".join(re.findall(r"<table class=summary>.*?</table>", page, re.S))
    # seconds in human units (not 1.53e-05), no <NA> or nan
    assert "<NA>" not in page and ">nan<" not in tables and "e-05" not in tables, tables
    assert "<td class=n>15.3 µs (14.9–15.7)</td>" in tables  # its IQR: 0.8 µs wide
    assert "<td class=n>40.0 µs (38.0–42.0)</td>" in tables  # the cached median with its IQR
    assert "<td class=n>1.32 s (1.26–1.39)</td>" in tables  # the novel sweep: median of two processes, min–max
    assert "<td class=n>no cached pass</td>" not in tables
    # a job without an eager baseline says so, rather than leaving a blank
    page = html.render(recs[recs["backend"] != "torch_eager"], rules=[])
    assert '<td class=n title="no eager">no eager</td>' in page


def _probe(path, tmp_path):
    probed = tmp_path / ("probed-" + os.path.basename(path))
    text = open(path, encoding="utf-8").read()
    probed.write_text(text.replace("<head>", "<head>" + PROBE, 1), encoding="utf-8")
    out = subprocess.run(
        [CHROMIUM, *CHROMIUM_FLAGS, "--dump-dom", probed.as_uri()],
        capture_output=True,
        text=True,
        timeout=180,
    )
    m = re.search(r"PROBE (\{.*?\})</pre>", out.stdout)
    assert m, f"chromium did not run the probe (exit {out.returncode}): {out.stderr[-2000:]}"
    import json

    return json.loads(m.group(1).replace("&quot;", '"'))


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is absent: run `make browser-check` (apt-get install chromium)")
def test_every_chart_is_drawn_in_headless_chromium(tmp_path):
    out = tmp_path / "report.html"
    with results.Writer(tmp_path / "r.jsonl") as w:
        for rec in _fixture_records().to_dict("records"):
            w.write(rec)
    assert cli.main(["report", str(tmp_path / "r.jsonl"), "--html", str(out), "--csv", str(tmp_path / "r.csv")]) == 0
    reports = [out] + ([os.environ["DYNSHAPE_HTML"]] if os.environ.get("DYNSHAPE_HTML") else [])
    probed = {path: _probe(path, tmp_path) for path in reports}
    for path, got in probed.items():
        assert got["charts"] >= 4 and got["blank"] == [] and got["undecoded"] == [] and got["failed"] == [], (path, got)
        assert got["boardShown"] and got["board"][0][:3] == ["backend", "mode", "passed / run"], (path, got)
    # the fixture's leaderboard as drawn: eager and einx_symbolic pass without a compile after the first shape
    head = probed[out]["board"][0]
    at = [head.index(h) for h in ("passed / run", "compiled once", "compiles / shape")]
    rows = {(r[0], r[1]): [r[i] for i in at] for r in probed[out]["board"][1:]}
    assert rows == {
        ("torch_eager", "unbounded"): ["1/1", "1", "0.00"],
        ("einx_symbolic", "unbounded"): ["1/1", "1", "0.25"],
        ("einx", "static"): ["1/1", "0", "1.00"],
    }, rows


def test_report_html_without_a_path_goes_beside_the_run(tmp_path, monkeypatch):
    """``report --html`` alone writes under the results (beside the run), never into the working directory."""
    with results.Writer(tmp_path / "runs" / "r.jsonl") as w:
        for rec in _fixture_records().to_dict("records"):
            w.write(rec)
    here = tmp_path / "cwd"
    here.mkdir()
    monkeypatch.chdir(here)
    assert cli.main(["report", str(tmp_path / "runs" / "r.jsonl"), "--html"]) == 0
    assert "<html" in (tmp_path / "runs" / "r.report.html").read_text()[:500].lower()
    assert list(here.iterdir()) == []


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is absent: run `make browser-check` (apt-get install chromium)")
def test_the_first_screen_answers_per_mode_who_compiles_once(tmp_path):
    """At 1280x800, before any scroll: one table per mode that ran, its backends
    with passed / run coloured as the matrix colours, compiled once, the cost
    against eager; a failing row links to its jobs. A screenshot is kept
    (``$DYNSHAPE_SCREENSHOT``: where to copy it, for a note)."""
    recs = _fixture_records()
    broken = recs[(recs["backend"] == "einx")].assign(backend="einx_broken", status="mismatch", ok=False)
    page = tmp_path / "report.html"
    page.write_text(html.render(pd.concat([recs, broken], ignore_index=True), rules=[]), encoding="utf-8")
    got = _probe(page, tmp_path)
    modes = {a["mode"]: a for a in got["answer"]}
    assert set(modes) == {"unbounded", "static"}, modes
    assert all(a["bottom"] <= got["height"] for a in got["answer"]), (got["height"], [a["bottom"] for a in got["answer"]])
    static = {r[0]: r[1:] for r in modes["static"]["rows"][1:]}
    assert static["einx"][:2] == ["1/1", "0/1"] and static["einx_broken"][0] == "0/1" and "1 failed" in static["einx_broken"][-1]
    unbounded = {r[0]: r[1:3] for r in modes["unbounded"]["rows"][1:]}
    assert unbounded == {"torch_eager": ["1/1", "1/1"], "einx_symbolic": ["1/1", "1/1"]}, unbounded
    # coloured: the passing row green, the failing one red
    assert sorted(modes["static"]["colours"]) == ["rgb(200, 230, 201)", "rgb(239, 154, 154)"], modes["static"]["colours"]
    assert 'id="fail-einx_broken-static"' in page.read_text()
    shot = tmp_path / "first-screen.png"
    subprocess.run([CHROMIUM, *CHROMIUM_FLAGS, f"--screenshot={shot}", page.as_uri()], capture_output=True, timeout=180)
    assert shot.stat().st_size > 10_000
    if os.environ.get("DYNSHAPE_SCREENSHOT"):
        import shutil

        shutil.copy(shot, os.environ["DYNSHAPE_SCREENSHOT"])


def test_the_matrix_leaves_out_the_cases_none_of_whose_jobs_ran():
    """A quick run plans ~470 cases and runs ~40: a row per case none of whose jobs ran
    would be ~430 rows of grey cells; the matrix counts them instead."""
    idle = [
        results.record(run_id="r", case=c, backend="torch_eager", mode="unbounded", status="skipped", message="left out")
        for c in ("zoo_a", "zoo_b")
    ]
    page = html.render(pd.concat([_fixture_records(), frame(idle)], ignore_index=True), rules=[])
    matrix = page.split("<h2>Conformance matrix</h2>", 1)[1].split("<h2", 1)[0]
    assert "<th>gnn_edge_divide</th>" in matrix and "zoo_a" not in matrix and "zoo_b" not in matrix
    assert "Left out: 2 cases none of whose jobs ran (planned, not run)." in matrix
    assert "Left out" not in html.render(_fixture_records(), rules=[])
