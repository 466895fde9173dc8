"""asv's published site shows our benchmarks: one benchmark is run with
``asv run --python=same`` into a temporary results folder, ``asv publish``
builds the site, :mod:`harness.asv_site` replaces its CDN scripts with copies
from the npm registry (no network but the registries here), and headless
Chromium loads it over HTTP on 127.0.0.1 (the site reads its JSON with XHR,
which Chromium refuses from ``file://``) and renders the benchmark list.

Chromium is Debian's ``chromium`` (``make browser-check`` installs it; CI's
``.ci/run`` does too); without it the browser part skips, naming that command.
"""

from __future__ import annotations

import functools
import http.server
import json
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from harness import asv_site

ROOT = Path(__file__).resolve().parent.parent
ASV = Path(sys.executable).parent / "asv"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
BENCHMARK = r"track_compiles\('gnn_edge_divide', 'einx_symbolic', 'unbounded'\)"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("asv")
    conf = json.loads((ROOT / "asv.conf.json").read_text())
    conf.update(
        repo=str(ROOT),
        benchmark_dir=str(ROOT / "benchmarks"),
        results_dir=str(tmp / "results"),
        html_dir=str(tmp / "html"),
        env_dir=str(tmp / "env"),
        # publish graphs the commits of its branches: the checkout's HEAD, so that a
        # commit not on main (a branch, a detached checkout) is graphed too
        branches=["HEAD"],
    )
    config = tmp / "asv.conf.json"
    config.write_text(json.dumps(conf))
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
    subprocess.run([str(ASV), "machine", "--yes", "--config", str(config)], cwd=tmp, capture_output=True, check=True)
    run = subprocess.run(
        [str(ASV), "run", "--config", str(config), "--python=same", "--quick", "--set-commit-hash", commit, "-b", BENCHMARK],
        cwd=tmp,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    pub = subprocess.run([str(ASV), "publish", "--config", str(config)], cwd=tmp, capture_output=True, text=True, timeout=300)
    assert pub.returncode == 0, pub.stdout[-3000:] + pub.stderr[-3000:]
    return tmp / "html"


def test_a_cdn_address_without_a_vendored_copy_is_named(tmp_path):
    (tmp_path / "index.html").write_text('<script src="https://cdn.example/new-dep.js"></script>')
    with pytest.raises(asv_site.SiteError, match=r"index.html: no vendored copy of https://cdn.example/new-dep.js"):
        asv_site.localise(tmp_path, tmp_path / "vendor")


def test_localise_points_every_cdn_tag_at_its_copy(tmp_path):
    vendor = tmp_path / "vendor-src"
    vendor.mkdir()
    for url in asv_site.VENDOR:
        (vendor / asv_site.local_name(url)).write_text("/* copy */")
    site = tmp_path / "site"
    site.mkdir()
    tags = "".join(f'<script src="{u}" integrity="sha256-x" crossorigin="anonymous"></script>' for u in asv_site.VENDOR)
    (site / "index.html").write_text(tags + '<a href="https://github.com/airspeed-velocity/asv/">asv</a>')
    assert asv_site.localise(site, vendor) == sorted(asv_site.VENDOR)
    page = (site / "index.html").read_text()
    assert "cdn" not in page and "integrity" not in page and "github.com" in page  # links to pages stay
    assert len(list((site / "vendor").iterdir())) == len(asv_site.VENDOR)


def test_asv_publish_writes_the_benchmark_and_its_value(site):
    index = json.loads((site / "index.json").read_text())
    assert "suite.Compiles.track_compiles" in index["benchmarks"]
    graphs = list((site / "graphs").rglob("suite.Compiles.track_compiles.json"))
    assert graphs, "no graph for the benchmark"
    # a parameterised benchmark's point holds one value per parameter combination
    points = [v for g in graphs for _, v in json.loads(g.read_text())]
    values = [x for v in points for x in (v if isinstance(v, list) else [v]) if x is not None]
    assert values and all(isinstance(v, (int, float)) for v in values), points[:3]


@pytest.fixture
def served(site):
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):  # no line per request in the test's output
            pass

    handler = functools.partial(Quiet, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium: `apt-get install -y chromium` (make browser-check)")
@pytest.mark.skipif(shutil.which("npm") is None, reason="no npm: the site's scripts come from the npm registry")
def test_the_published_site_renders_the_benchmark_in_chromium(site, served, tmp_path):
    asv_site.localise(site, asv_site.fetch(ROOT / ".asv" / "vendor"))
    dom = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--virtual-time-budget=10000",
            "--dump-dom",
            served,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert dom.returncode == 0, dom.stderr[-2000:]
    # the benchmark list is built by the site's scripts from index.json: present only if they ran
    assert "track_compiles" in dom.stdout, dom.stdout[-2000:]
