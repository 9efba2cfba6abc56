#!/usr/bin/env python3
"""Prints criterion results as comparison tables: one per benchmark group,
medians per completed operation, and each row's ratio to falconet measured
in the same run. Usage: scripts/bench_report.py [target/criterion]"""
import json
import pathlib
import sys
from collections import defaultdict

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "target/criterion")
groups = defaultdict(dict)  # group -> {(function, parameter): ns per op}
for bench in sorted(root.glob("**/new/benchmark.json")):
    meta = json.loads(bench.read_text())
    estimates = json.loads((bench.parent / "estimates.json").read_text())
    median_ns = estimates["median"]["point_estimate"]
    throughput = meta.get("throughput") or {}
    per_iteration = throughput.get("Elements") or throughput.get("Bytes") or 1
    unit = "B" if "Bytes" in throughput else "op"
    key = (meta["function_id"] or "", meta.get("value_str") or "")
    groups[meta["group_id"]][key] = (median_ns / per_iteration, unit)

for group, rows in sorted(groups.items()):
    params = sorted({p for _, p in rows}, key=lambda p: (len(p), p))
    ours_name = next((f for f, _ in rows if f.startswith("falconet")), "falconet")
    functions = sorted({f for f, _ in rows}, key=lambda f: (not f.startswith("falconet"), f))
    print(f"\n### {group}\n")
    header = "| | " + " | ".join(
        (p if p.endswith("B") else f"{p} threads" if p else "median") for p in params) + " |"
    print(header)
    print("|" + "---|" * (len(params) + 1))
    for function in functions:
        cells = []
        for p in params:
            if (function, p) not in rows:
                cells.append("")
                continue
            ns, unit = rows[(function, p)]
            ours = rows.get((ours_name, p))
            if unit == "B":
                cell = f"{1 / ns:.1f} GB/s"  # bytes per ns
            else:
                cell = f"{ns:.1f} ns ({1e3 / ns:.1f} M/s)"
            if ours and function != ours_name and "alone" not in function:
                cell += f" (falconet {ns / ours[0]:.1f}x)"
            cells.append(cell)
        print(f"| {function} | " + " | ".join(cells) + " |")
