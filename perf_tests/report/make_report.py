#!/usr/bin/env python3
"""The benchmark report of perf_svd_suite: a Markdown table of times and
speedups per experiment and PNG plots, from one or more Google Benchmark JSON
files (perf_svd_suite --benchmark_out=... --benchmark_out_format=json).

    make_report.py RESULT.json [MORE.json ...] --out DIR [--title TEXT]

Writes DIR/report.md, DIR/speedup_vs_size.png, DIR/time_vs_batch.png,
DIR/mixed_sizes.png and DIR/headline.png (the plots whose data exist).
Speedup = baseline time / kwsvd time on the same data; above 1 kwsvd is
faster.
"""

import argparse
import json
import math
import os
import sys
from collections import OrderedDict, defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

EXPERIMENTS = OrderedDict(
    [
        ("fig7", "W-cycle paper Fig. 7: m, n <= 32"),
        ("fig8a", "W-cycle paper Fig. 8(a): one matrix"),
        ("fig8b", "W-cycle paper Fig. 8(b): square 64..1024, several batches"),
        ("table4", "W-cycle paper Table IV: 200 square matrices"),
        ("table6", "W-cycle paper Table VI: mixed sizes (shapes uniform in (L/2, L]^2)"),
        ("seed002_tiny", "seed 002: tiny square, batch 10000"),
        ("seed002_square", "seed 002: square to 1000, batch 1000"),
        ("seed002_tall", "seed 002: tall n = 16, batch 1000"),
        ("mixed_small", "mixed small sizes: shapes uniform in [1, 32]^2, every 100th 64 x 64, batch 10000"),
        ("tall_k", "tall and wide with 64 to 256 columns, batch 100"),
    ]
)
TO_MS = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}


def parse_name(name):
    """experiment/impl/scalar/key:value/... -> (experiment, impl, scalar, params)."""
    parts = name.split("/")
    params = OrderedDict()
    for p in parts[3:]:
        if ":" in p and not p.startswith(("min_time", "iterations", "repeats")):
            k, v = p.split(":", 1)
            params[k] = int(v)
    return parts[0], parts[1], parts[2], params


def load(paths):
    context, rows = {}, []
    for path in paths:
        with open(path) as f:
            text = f.read()
        try:
            data = json.loads(text)
        except ValueError:
            # A run cut short (a time limit) leaves the benchmarks list open:
            # keep every complete entry.
            cut = text.rfind("\n    }")
            data = json.loads(text[: cut + 6] + "\n  ]\n}") if cut > 0 else {}
            print("make_report.py: %s was cut short; using its complete entries" % path)
        context.update(data.get("context", {}))
        for b in data.get("benchmarks", []):
            if b.get("run_type", "iteration") != "iteration":
                continue
            exp, impl, scalar, params = parse_name(b["name"])
            if exp not in EXPERIMENTS:
                continue
            row = {
                "experiment": exp,
                "impl": impl,
                "scalar": scalar,
                "params": params,
                "error": b.get("error_message") if b.get("error_occurred") else None,
            }
            if row["error"] is None:
                row["ms"] = b["real_time"] * TO_MS[b.get("time_unit", "ns")]
                for key in ("residual", "orthU", "orthV", "sweeps", "w", "GFLOP/s"):
                    if key in b:
                        row[key] = b[key]
            rows.append(row)
    return context, rows


def point_key(params):
    return tuple(params.items())


def shape_label(params):
    if "group" in params:
        return "m, n <= %d" % params["group"]
    return "%d x %d" % (params["m"], params["n"])


def fmt_ms(x):
    if x is None:
        return "-"
    return "%.3g" % x if x < 100 else "%.0f" % x


def fmt_e(x):
    return "-" if x is None else "%.1e" % x


def group_points(rows):
    """(experiment, scalar) -> OrderedDict(point key -> {impl: row})."""
    table = OrderedDict()
    for r in rows:
        t = table.setdefault((r["experiment"], r["scalar"]), OrderedDict())
        t.setdefault(point_key(r["params"]), {})[r["impl"]] = r
    return table


def baselines_of(rows):
    seen = []
    for r in rows:
        if r["impl"] != "kwsvd" and r["impl"] not in seen:
            seen.append(r["impl"])
    return seen


def speedup(impls, baseline):
    k, b = impls.get("kwsvd"), impls.get(baseline)
    if not k or not b or k.get("error") or b.get("error"):
        return None
    return b["ms"] / k["ms"]


def best_baseline_speedup(impls, baselines):
    values = [speedup(impls, b) for b in baselines]
    values = [v for v in values if v is not None]
    return min(values) if values else None


def write_markdown(path, context, rows, title, plots):
    baselines = baselines_of(rows)
    table = group_points(rows)
    out = []
    out.append("# %s\n" % title)
    out.append("| | |\n|---|---|")
    out.append("| device | %s |" % context.get("device", "?"))
    out.append("| date | %s |" % context.get("date", "?"))
    out.append("| suite | %s |" % context.get("suite", "?"))
    out.append("| execution space | %s |" % context.get("execution_space", "?"))
    out.append("| host | %s, %s CPUs |" % (context.get("host_name", "?"), context.get("num_cpus", "?")))
    out.append("| GFLOP/s nominal count | %s |" % context.get("nominal_flops", "?"))
    out.append("")
    out.append(
        "Times are per call (ms, device-timed, inputs resident on the device). "
        "Speedup = baseline time / kwsvd time on the same data (above 1: kwsvd faster). "
        "residual = max ||A - U S V^T||_F / ||A||_F and orthU = max ||U^T U - I||_F over the "
        "first matrices of the batch; sweeps = kwsvd's mean Jacobi sweeps per matrix.\n"
    )
    for name in plots:
        out.append("![%s](%s)\n" % (name, name))
    for (exp, scalar), points in table.items():
        out.append("## %s (%s)\n" % (EXPERIMENTS[exp], scalar))
        head = ["shape", "batch", "kwsvd ms"]
        for b in baselines:
            head.append("%s ms" % b)
        for b in baselines:
            head.append("vs %s" % b)
        head += ["kwsvd residual", "kwsvd orthU", "baseline orthU", "sweeps"]
        out.append("| " + " | ".join(head) + " |")
        out.append("|" + "---|" * len(head))
        for key, impls in points.items():
            params = dict(key)
            k = impls.get("kwsvd", {})
            cells = [shape_label(params), str(params.get("batch", ""))]
            cells.append("error" if k.get("error") else fmt_ms(k.get("ms")))
            for b in baselines:
                r = impls.get(b)
                if r is None:
                    cells.append("-")
                elif r.get("error"):
                    cells.append("skipped")
                else:
                    cells.append(fmt_ms(r["ms"]))
            for b in baselines:
                s = speedup(impls, b)
                cells.append("-" if s is None else "**%.2fx**" % s if s >= 1 else "%.2fx" % s)
            orth_base = [impls[b].get("orthU") for b in baselines if b in impls and not impls[b].get("error")]
            orth_base = [o for o in orth_base if o is not None]
            cells += [
                fmt_e(k.get("residual")),
                fmt_e(k.get("orthU")),
                fmt_e(max(orth_base)) if orth_base else "-",
                "-" if k.get("sweeps") is None else "%.1f" % k["sweeps"],
            ]
            out.append("| " + " | ".join(cells) + " |")
        out.append("")
    with open(path, "w") as f:
        f.write("\n".join(out))


def device_title(context, what):
    return "%s\n%s" % (what, context.get("device", "unknown device"))


def finish(fig, path, drawn=True):
    """Writes the figure when something was drawn; returns whether it was."""
    fig.tight_layout()
    if drawn:
        fig.savefig(path, dpi=120)
    plt.close(fig)
    return drawn


def plot_speedup_vs_size(path, context, rows):
    """Speedup over each baseline vs n for the uniform square experiments."""
    baselines = baselines_of(rows)
    table = group_points(rows)
    scalars = [s for s in ("double", "float") if any(r["scalar"] == s for r in rows)]
    fig, axes = plt.subplots(1, len(scalars), figsize=(6.5 * len(scalars), 4.8), squeeze=False)
    drawn = False
    for ax, scalar in zip(axes[0], scalars):
        for exp in ("fig8b", "table4", "seed002_square", "seed002_tiny", "fig8a"):
            points = table.get((exp, scalar))
            if not points:
                continue
            by_batch = defaultdict(lambda: defaultdict(list))
            for key, impls in points.items():
                p = dict(key)
                if p.get("m") != p.get("n"):
                    continue
                for b in baselines:
                    s = speedup(impls, b)
                    if s is not None:
                        by_batch[(p["batch"], b)]["n"].append(p["n"])
                        by_batch[(p["batch"], b)]["s"].append(s)
            for (batch, b), d in sorted(by_batch.items()):
                ax.plot(d["n"], d["s"], marker="o", label="%s, batch %d, vs %s" % (exp, batch, b))
                drawn = True
        ax.axhline(1.0, color="gray", linewidth=1, linestyle="--")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("matrix size n (n x n)")
        ax.set_ylabel("speedup of kwsvd (baseline time / kwsvd time)")
        ax.set_title(device_title(context, "kwsvd speedup vs matrix size, %s" % scalar))
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=6)
    return finish(fig, path, drawn)


def plot_time_vs_batch(path, context, rows):
    """Fig. 7: time vs batch for each small shape, kwsvd and the batched baseline."""
    table = group_points(rows)
    scalars = [s for s in ("double", "float") if (("fig7", s) in table)]
    if not scalars:
        return False
    fig, axes = plt.subplots(1, len(scalars), figsize=(6.5 * len(scalars), 4.8), squeeze=False)
    for ax, scalar in zip(axes[0], scalars):
        lines = defaultdict(lambda: defaultdict(list))
        for key, impls in table[("fig7", scalar)].items():
            p = dict(key)
            for impl, r in impls.items():
                if not r.get("error"):
                    lines[(p["m"], p["n"], impl)]["batch"].append(p["batch"])
                    lines[(p["m"], p["n"], impl)]["ms"].append(r["ms"])
        colors = {}
        for (m, n, impl), d in sorted(lines.items()):
            c = colors.setdefault((m, n), "C%d" % len(colors))
            style = "-" if impl == "kwsvd" else "--"
            ax.plot(d["batch"], d["ms"], style, color=c, marker="o", label="%dx%d %s" % (m, n, impl))
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("batch size (matrices)")
        ax.set_ylabel("time per call (ms)")
        ax.set_title(device_title(context, "Fig. 7 shapes: time vs batch, %s (solid: kwsvd)" % scalar))
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=6, ncol=2)
    return finish(fig, path)


def plot_mixed(path, context, rows):
    table = group_points(rows)
    baselines = baselines_of(rows)
    scalars = [s for s in ("double", "float") if (("table6", s) in table)]
    if not scalars:
        return False
    fig, ax = plt.subplots(figsize=(7, 4.5))
    width = 0.8 / max(1, len(scalars) * len(baselines))
    labels = None
    i = 0
    for scalar in scalars:
        points = table[("table6", scalar)]
        labels = [shape_label(dict(k)) + "\n(%d)" % dict(k)["batch"] for k in points]
        for b in baselines:
            vals = [speedup(impls, b) or 0 for impls in points.values()]
            xs = [x + i * width for x in range(len(vals))]
            ax.bar(xs, vals, width, label="%s vs %s" % (scalar, b))
            i += 1
    ax.axhline(1.0, color="gray", linewidth=1, linestyle="--")
    ax.set_xticks([x + width * (i - 1) / 2 for x in range(len(labels))])
    ax.set_xticklabels(labels, fontsize=7)
    ax.set_yscale("log")
    ax.set_xlabel("size group (number of matrices)")
    ax.set_ylabel("speedup of kwsvd (baseline time / kwsvd time)")
    ax.set_title(device_title(context, "Table VI: mixed-size batches in one call"))
    ax.legend(fontsize=7)
    ax.grid(True, axis="y", which="both", alpha=0.3)
    return finish(fig, path)


def plot_headline(path, context, rows):
    """Speedup over the fastest baseline at each point vs the largest extent."""
    table = group_points(rows)
    baselines = baselines_of(rows)
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    drawn = False
    markers = "osD^v<>p"
    for i, exp in enumerate(EXPERIMENTS):
        for scalar, fill in (("double", "full"), ("float", "none")):
            points = table.get((exp, scalar))
            if not points:
                continue
            xs, ys = [], []
            for key, impls in points.items():
                s = best_baseline_speedup(impls, baselines)
                if s is None:
                    continue
                p = dict(key)
                xs.append(p.get("group", max(p.get("m", 0), p.get("n", 0))))
                ys.append(s)
            if xs:
                ax.scatter(xs, ys, marker=markers[i % len(markers)],
                           facecolors="C%d" % i if fill == "full" else "none",
                           edgecolors="C%d" % i, label="%s %s" % (exp, scalar))
                drawn = True
    ax.axhline(1.0, color="gray", linewidth=1, linestyle="--")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("largest matrix extent max(m, n)")
    ax.set_ylabel("speedup over the fastest baseline")
    ax.set_title(device_title(context, "kwsvd vs the fastest baseline at each point (filled: double)"))
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=6, ncol=2)
    return finish(fig, path, drawn)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", nargs="+", help="Google Benchmark JSON files of perf_svd_suite")
    parser.add_argument("--out", required=True, help="output folder")
    parser.add_argument("--title", default="kwsvd benchmark report")
    args = parser.parse_args()
    context, rows = load(args.results)
    if not rows:
        sys.exit("make_report.py: no perf_svd_suite results in %s" % ", ".join(args.results))
    os.makedirs(args.out, exist_ok=True)
    plots = []
    for name, fn in (
        ("headline.png", plot_headline),
        ("speedup_vs_size.png", plot_speedup_vs_size),
        ("time_vs_batch.png", plot_time_vs_batch),
        ("mixed_sizes.png", plot_mixed),
    ):
        if fn(os.path.join(args.out, name), context, rows):
            plots.append(name)
    write_markdown(os.path.join(args.out, "report.md"), context, rows, args.title, plots)
    errors = [r for r in rows if r.get("error") and not r["error"].startswith("skipped") and "rejected" not in r["error"]]
    print("make_report.py: %d results, %d plots -> %s" % (len(rows), len(plots), args.out))
    for r in errors:
        print("  failed: %s/%s/%s %s: %s" % (r["experiment"], r["impl"], r["scalar"], r["params"], r["error"]))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
