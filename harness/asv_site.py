"""Make asv's published site work offline.

``asv publish`` writes an ``index.html`` that loads jQuery, flot, bootstrap,
stupidtable and md5 from CDNs; without network (this project's machines, a CI
artefact opened later) the page shows asv's "external dependencies failed to
load" error instead of the benchmarks. :func:`fetch` takes the same releases
from the npm registry (``npm pack``) into a vendor folder once, and
:func:`localise` copies them into the site and points every tag at the copy.

    python -m harness.asv_site results/asv-html        # after `asv publish`

A CDN address that is not in :data:`VENDOR` is an error naming it, so a newer
asv that adds a dependency fails loudly rather than rendering half a page.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

#: CDN address in asv's pages -> (npm package@version, file inside the package).
#: stupidtable 1.0.1 is not on npm; 1.1.3 keeps its ``$.fn.stupidtable`` API.
VENDOR = {
    "https://code.jquery.com/jquery-3.3.1.min.js": ("jquery@3.3.1", "dist/jquery.min.js"),
    "https://cdnjs.cloudflare.com/ajax/libs/flot/0.8.3/jquery.flot.min.js": ("flot@0.8.3", "jquery.flot.js"),
    "https://cdnjs.cloudflare.com/ajax/libs/flot/0.8.3/jquery.flot.time.min.js": ("flot@0.8.3", "jquery.flot.time.js"),
    "https://cdnjs.cloudflare.com/ajax/libs/flot/0.8.3/jquery.flot.selection.min.js": ("flot@0.8.3", "jquery.flot.selection.js"),
    "https://cdnjs.cloudflare.com/ajax/libs/flot/0.8.3/jquery.flot.categories.min.js": (
        "flot@0.8.3",
        "jquery.flot.categories.js",
    ),
    "https://cdn.jsdelivr.net/npm/flot-orderbars@1.0.0/js/jquery.flot.orderBars.js": (
        "flot-orderbars@1.0.0",
        "js/jquery.flot.orderBars.js",
    ),
    "https://cdnjs.cloudflare.com/ajax/libs/stupidtable/1.0.1/stupidtable.min.js": (
        "stupid-table-plugin@1.1.3",
        "stupidtable.min.js",
    ),
    "https://cdnjs.cloudflare.com/ajax/libs/blueimp-md5/2.19.0/js/md5.min.js": ("blueimp-md5@2.19.0", "js/md5.min.js"),
    "https://cdn.jsdelivr.net/npm/bootstrap@3.1.1/dist/js/bootstrap.min.js": ("bootstrap@3.1.1", "dist/js/bootstrap.min.js"),
    "https://cdn.jsdelivr.net/npm/bootstrap@3.1.1/dist/css/bootstrap.min.css": ("bootstrap@3.1.1", "dist/css/bootstrap.min.css"),
}

#: a script or stylesheet tag's address on a CDN (links to web pages are left alone)
_CDN = re.compile(r'<(script|link)\b[^>]*?(?:src|href)="(https?://[^"]+)"[^>]*>')
#: attributes that only make sense for the CDN copy (the integrity hash is of the CDN's bytes)
_CDN_ATTRS = re.compile(r'\s+(?:integrity|crossorigin|referrerpolicy)="[^"]*"')


class SiteError(RuntimeError):
    """The site or the vendor folder is not what :func:`localise` expects."""


def local_name(url: str) -> str:
    """The file name of ``url``'s copy in the site's ``vendor/`` folder."""
    package, inner = VENDOR[url]
    return f"{package.replace('@', '-')}-{Path(inner).name}"


def fetch(vendor: Path, npm: str = "npm") -> Path:
    """Fill ``vendor`` with every file of :data:`VENDOR` (``npm pack``, skipped
    for files already there); returns ``vendor``."""
    vendor.mkdir(parents=True, exist_ok=True)
    wanted: dict[str, list[str]] = {}
    for url, (package, _) in VENDOR.items():
        if not (vendor / local_name(url)).exists():
            wanted.setdefault(package, []).append(url)
    if wanted and shutil.which(npm) is None:
        raise SiteError(f"npm not found: it fetches {', '.join(sorted(wanted))} from the npm registry")
    for package, urls in wanted.items():
        with tempfile.TemporaryDirectory() as tmp:
            out = subprocess.run([npm, "pack", "--silent", package], cwd=tmp, capture_output=True, text=True, timeout=300)
            if out.returncode != 0:
                raise SiteError(f"npm pack {package} failed: {out.stderr.strip().splitlines()[-1:]}")
            (tgz,) = Path(tmp).glob("*.tgz")
            with tarfile.open(tgz) as tar:
                for url in urls:
                    member = tar.extractfile(f"package/{VENDOR[url][1]}")
                    if member is None:
                        raise SiteError(f"{package} has no {VENDOR[url][1]}")
                    (vendor / local_name(url)).write_bytes(member.read())
    return vendor


def localise(site: Path, vendor: Path) -> list[str]:
    """Copy the vendored files into ``site/vendor/`` and point every CDN tag of
    the site's HTML pages at them; returns the addresses replaced."""
    pages = sorted(site.glob("*.html"))
    if not pages:
        raise SiteError(f"{site}: no HTML pages (run `asv publish` first)")
    (site / "vendor").mkdir(exist_ok=True)
    replaced: set[str] = set()

    def swap(m: re.Match) -> str:
        url = m.group(2)
        if url not in VENDOR:
            raise SiteError(f"{page.name}: no vendored copy of {url} (add it to harness.asv_site.VENDOR)")
        src = vendor / local_name(url)
        if not src.exists():
            raise SiteError(f"{src} missing: run `python -m harness.asv_site --fetch {site}`")
        shutil.copyfile(src, site / "vendor" / local_name(url))
        replaced.add(url)
        return _CDN_ATTRS.sub("", m.group(0).replace(url, f"vendor/{local_name(url)}"))

    for page in pages:
        text = page.read_text()
        new = _CDN.sub(swap, text)
        if new != text:
            page.write_text(new)
    return sorted(replaced)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m harness.asv_site", description=__doc__.split("\n\n")[0])
    ap.add_argument("site", type=Path, help="asv's html_dir (asv.conf.json), after `asv publish`")
    ap.add_argument("--vendor", type=Path, default=Path(".asv/vendor"), help="where the npm copies live")
    ap.add_argument("--fetch", action="store_true", help="fetch missing copies from the npm registry first")
    a = ap.parse_args(argv)
    try:
        if a.fetch:
            fetch(a.vendor)
        done = localise(a.site, a.vendor)
    except SiteError as e:
        print(f"harness.asv_site: {e}", file=sys.stderr)
        return 2
    print(f"{a.site}: {len(done)} CDN dependencies served from {a.site / 'vendor'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
