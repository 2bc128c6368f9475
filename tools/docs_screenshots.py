"""Look at the built API site as a reader would: Debian's headless chromium opens each page from
disk (no server, no network), saves a screenshot and reports whether its math and tables rendered.

Not run by CI (a browser is a heavy dependency); run it after ``nox -s docs`` when the site's
look changes:

    sudo apt-get install -y chromium
    python tools/docs_screenshots.py                       # every page -> build/docs/screenshots/
    python tools/docs_screenshots.py permucate quest-qat   # some pages
    python tools/docs_screenshots.py quest-qat --object quest_qat.quest_quantize  # one API entry

For each page it prints the formulas typeset by KaTeX out of those on the page, KaTeX errors and
the tables; it exits 1 if a formula was left as source or failed to typeset, or a page has none of
the content it should (an empty API reference). Standard library only.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SITE = ROOT / "build" / "docs" / "site"
OUT = ROOT / "build" / "docs" / "screenshots"
BROWSERS = ("chromium", "chromium-browser", "google-chrome")
# Time the page's scripts get to run (KaTeX typesets after load) in chromium's virtual clock.
BUDGET_MS = "8000"


def browser() -> str:
    for name in BROWSERS:
        found = shutil.which(name)
        if found:
            return found
    sys.exit("no chromium found; install it: sudo apt-get install -y chromium")


def chromium(binary: str, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [
        binary, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
        "--no-first-run", f"--user-data-dir={profile}", "--allow-file-access-from-files",
        f"--virtual-time-budget={BUDGET_MS}", *args,
    ]  # fmt: skip
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


def inspect(dom: str) -> dict[str, int]:
    """Counts in a rendered page's DOM: arithmatex spans (formulas on the page), the ones KaTeX
    typeset, KaTeX errors, tables and API entries (mkdocstrings' ``doc-object``)."""
    spans = re.findall(r'<(?:span|div) class="arithmatex">(.*?)</(?:span|div)>', dom, re.S)
    return {
        "formulas": dom.count('class="arithmatex"'),
        "typeset": sum('class="katex' in span for span in spans),
        "errors": dom.count("katex-error"),
        "tables": dom.count("<table"),
        "api entries": dom.count("doc-object "),
    }


ONE_OBJECT = """<script>
document.addEventListener("DOMContentLoaded", function () {
  var heading = document.getElementById(%s);
  var entry = heading && (heading.closest(".doc-object") || heading.parentElement);
  if (entry) { document.querySelector(".md-content__inner").replaceChildren(entry); }
});
</script></body>"""


def one_object(page: Path, name: str) -> Path:
    """A copy of `page` beside it (so its assets resolve) that shows only the API entry `name`."""
    copy = page.with_name(f"_one-object-{page.name}")
    text = page.read_text(encoding="utf-8")
    if f'id="{name}"' not in text:
        sys.exit(f"{page.name} has no API entry {name!r}")
    copy.write_text(text.replace("</body>", ONE_OBJECT % json.dumps(name)), encoding="utf-8")
    return copy


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pages", nargs="*", help="page names without .html (default: all)")
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=2000)
    parser.add_argument(
        "--object", help="screenshot only this API entry (e.g. quest_qat.quest_quantize)"
    )
    args = parser.parse_args(argv)
    if not (SITE / "index.html").is_file():
        sys.exit(f"no site in {SITE}: run `nox -s docs` first")
    pages = [SITE / f"{name}.html" for name in args.pages] or sorted(SITE.glob("*.html"))
    pages = [p for p in pages if p.name not in ("404.html", "search.html")]
    missing = [p.name for p in pages if not p.is_file()]
    if missing:
        sys.exit(f"no such page(s): {', '.join(missing)}")
    binary = browser()
    OUT.mkdir(parents=True, exist_ok=True)
    failures = []
    print(f"{'page':<22}{'formulas':>10}{'typeset':>9}{'errors':>8}{'tables':>8}{'api':>6}")
    if args.object and len(pages) != 1:
        sys.exit("--object needs exactly one page")
    with tempfile.TemporaryDirectory() as profile:
        for page in pages:
            shown, shot = page, OUT / f"{page.stem}.png"
            if args.object:
                shown, shot = one_object(page, args.object), OUT / f"{args.object}.png"
            url = shown.as_uri()
            chromium(
                binary, Path(profile), f"--window-size={args.width},{args.height}",
                f"--screenshot={shot}", url,
            )  # fmt: skip
            dom = chromium(binary, Path(profile), "--dump-dom", url).stdout
            counts = inspect(dom)
            print(
                f"{page.stem:<22}"
                + "".join(
                    f"{v:>{w}}" for v, w in zip(counts.values(), (10, 9, 8, 8, 6), strict=True)
                )
            )
            if counts["typeset"] < counts["formulas"] or counts["errors"]:
                failures.append(f"{page.stem}: math not rendered")
            if page.stem != "index" and counts["api entries"] == 0:
                failures.append(f"{page.stem}: no API entries")
            if not shot.is_file():
                failures.append(f"{page.stem}: no screenshot")
            if shown != page:
                shown.unlink()
    print(f"screenshots in {OUT}")
    for failure in failures:
        print(f"FAIL {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
