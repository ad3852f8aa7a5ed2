#!/usr/bin/env python3
"""Turn a benchmark CSV into an SVG bar chart (Python standard library only).

    usage: scripts/chart.py RESULTS.csv OUT.svg [--title TITLE] [--unit "ops/s"]

The CSV has a header and one row per workload and tool:

    workload,tool,ops_per_sec
    fillseq,Shale,806395
    fillseq,RocksDB 11.8.1,480207

Each workload is a group of bars, one per tool (in the order the tools first appear), and
above each group the ratio of the first tool (Shale) to the second is printed ("1.68x").
Values are scaled per group (each group's tallest bar is full height) so that workloads of
very different speeds stay readable; each bar carries its own value.
"""

import argparse
import csv
import sys
from html import escape

COLORS = ["#2b6cb0", "#c05621", "#718096", "#2f855a", "#805ad5"]


def read(path):
    groups, tools, values = [], [], {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            w, t = row["workload"].strip(), row["tool"].strip()
            try:
                v = float(row["ops_per_sec"])
            except (TypeError, ValueError):
                continue
            if w not in groups:
                groups.append(w)
            if t not in tools:
                tools.append(t)
            values[(w, t)] = v
    if not groups or not tools:
        sys.exit(f"{path}: no rows with workload,tool,ops_per_sec")
    return groups, tools, values


def human(v):
    for div, suffix in ((1e6, "M"), (1e3, "k")):
        if v >= div:
            return f"{v / div:.3g}{suffix}"
    return f"{v:.3g}"


def render(groups, tools, values, title, unit):
    bar_w, gap, group_gap = 26, 4, 56
    group_w = len(tools) * (bar_w + gap) - gap
    left, top, plot_h, bottom = 20, 70, 220, 60
    width = left * 2 + len(groups) * group_w + (len(groups) - 1) * group_gap
    # Room for the title and the subtitle under it.
    width = max(width, 600, int(8.5 * len(title)) + 40)
    height = top + plot_h + bottom + 24
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{width / 2}" y="22" text-anchor="middle" font-size="15" font-weight="bold">'
        f"{escape(title)}</text>",
        f'<text x="{width / 2}" y="40" text-anchor="middle" fill="#555">{escape(unit)}, higher is better; '
        f"ratio = {escape(tools[0])} / {escape(tools[1] if len(tools) > 1 else tools[0])}; "
        "bars scaled per workload</text>",
    ]
    base_y = top + plot_h
    content = len(groups) * group_w + (len(groups) - 1) * group_gap
    for gi, g in enumerate(groups):
        x0 = (width - content) / 2 + gi * (group_w + group_gap)
        peak = max((values.get((g, t), 0) for t in tools), default=0) or 1
        for ti, t in enumerate(tools):
            v = values.get((g, t))
            if v is None:
                continue
            h = plot_h * 0.85 * v / peak
            x = x0 + ti * (bar_w + gap)
            out.append(
                f'<rect x="{x}" y="{base_y - h:.1f}" width="{bar_w}" height="{h:.1f}" '
                f'fill="{COLORS[ti % len(COLORS)]}"><title>{escape(g)} {escape(t)}: {v:,.0f}</title></rect>'
            )
            out.append(
                f'<text x="{x + bar_w / 2}" y="{base_y - h - 4:.1f}" text-anchor="middle" '
                f'font-size="9">{human(v)}</text>'
            )
        a, b = values.get((g, tools[0])), values.get((g, tools[1])) if len(tools) > 1 else None
        if a and b:
            out.append(
                f'<text x="{x0 + group_w / 2}" y="{top - 6}" text-anchor="middle" font-weight="bold" '
                f'fill="{"#276749" if a >= b else "#9b2c2c"}">{a / b:.2f}x</text>'
            )
        out.append(
            f'<text x="{x0 + group_w / 2}" y="{base_y + 16}" text-anchor="middle">{escape(g)}</text>'
        )
    out.append(
        f'<line x1="{left - 4}" y1="{base_y}" x2="{width - left + 4}" y2="{base_y}" stroke="#333"/>'
    )
    lx = left
    for ti, t in enumerate(tools):
        y = base_y + 40
        out.append(f'<rect x="{lx}" y="{y - 9}" width="10" height="10" fill="{COLORS[ti % len(COLORS)]}"/>')
        out.append(f'<text x="{lx + 14}" y="{y}">{escape(t)}</text>')
        lx += 24 + 7 * len(t)
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("csv")
    p.add_argument("svg")
    p.add_argument("--title", default="Shale vs RocksDB")
    p.add_argument("--unit", default="ops/s")
    a = p.parse_args()
    groups, tools, values = read(a.csv)
    with open(a.svg, "w") as f:
        f.write(render(groups, tools, values, a.title, a.unit))


if __name__ == "__main__":
    main()
