"""`nectar report FILE --html OUT`: a self-contained page whose SVG charts read back as the
numbers of the bench lines (docs/results/suites.jsonl, a real `nectar bench suites --json`)."""

import json
import re
import subprocess
import xml.etree.ElementTree as ET

import pytest

from conftest import REPO

SVG = "{http://www.w3.org/2000/svg}"


def test_report_html_charts_parse_back(nectar_bin, tmp_path):
    src = REPO / "docs" / "results" / "suites.jsonl"
    lines = [json.loads(x) for x in src.read_text().splitlines() if x.strip()]
    out = tmp_path / "report.html"
    r = subprocess.run([nectar_bin, "report", str(src), "--html", str(out)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    page = out.read_text(encoding="utf-8")
    # Self-contained: no script, no external resource (the SVG namespace is a name, not a fetch).
    assert "<script" not in page and not re.search(r"\b(src|href)\s*=", page)
    assert "http" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    svgs = [ET.fromstring(s) for s in re.findall(r"<svg\b.*?</svg>", page, flags=re.S)]
    titles = [s.find(f"{SVG}title").text for s in svgs]
    assert titles == ["Seconds per run", "MB per run (both directions)", "Seconds per operator", "MB per operator (both directions)"]
    runs = [line["variant"] for line in lines]
    for svg, title in zip(svgs, titles):
        bars = svg.findall(f"{SVG}rect[@class='bar']")
        # Widths are proportional to the values, the longest bar spanning the plot.
        ratios = {round(float(b.get("width")) / float(b.get("data-value")), 3) for b in bars if float(b.get("width")) >= 5}
        assert max(ratios) / min(ratios) < 1.01, title
        values = {(b.get("data-run"), b.get("data-label")): float(b.get("data-value")) for b in bars}
        assert {run for run, _ in values} == set(runs)
        for line in lines:
            run = line["variant"]
            if title == "Seconds per run":
                assert values[(run, run)] == pytest.approx(line["seconds"])
            elif title.startswith("MB per run"):
                assert values[(run, run)] == pytest.approx(line["bytes_total"] / 1e6)
            else:
                for op in line["breakdown"]["ops"]:
                    want = op["seconds"] if title.startswith("Seconds") else (op["bytes_sent"] + op["bytes_recv"]) / 1e6
                    assert values[(run, op["op"])] == pytest.approx(want)
    # ROTL's preprocessing share is drawn over its bars.
    assert any(svg.findall(f"{SVG}rect[@class='prepro']") for svg in svgs[2:])


def test_report_without_breakdown_is_an_error(nectar_bin, tmp_path):
    f = tmp_path / "net.jsonl"
    f.write_text('{"bench":"net","variant":"tcp","seconds":1}\n')
    r = subprocess.run([nectar_bin, "report", str(f), "--html", str(tmp_path / "o.html")], capture_output=True, text=True)
    assert r.returncode != 0 and "no line with a per-operator breakdown" in r.stderr
