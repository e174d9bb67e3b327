"""Bar charts in the paper's style: per configuration, the result (left axis) beside the CPU
time split into user, system and tracer (right axis)."""

import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def phase_plot(path, title, cells):
    names = [s["config"].name for s in cells]
    x = range(len(names))
    fig, ax = plt.subplots(figsize=(max(6, 0.9 * len(names) + 2), 4.8))
    ax2 = ax.twinx()
    width = 0.38
    unit = next((s["unit"] for s in cells if "mean" in s), "")
    vals = [s.get("mean", 0) for s in cells]
    errs = [s.get("ci") or 0 for s in cells]
    ax.bar([i - width / 2 for i in x], vals, width, yerr=errs, color="#4c72b0", capsize=3,
           label="%s (left)" % ("elapsed s" if unit == "s" else unit))
    user = [s.get("user", 0) for s in cells]
    system = [s.get("system", 0) for s in cells]
    tracer = [s.get("monitor_user", 0) + s.get("monitor_system", 0) for s in cells]
    xs = [i + width / 2 for i in x]
    ax2.bar(xs, user, width, color="#dd8452", label="user CPU s (right)")
    ax2.bar(xs, system, width, bottom=user, color="#55a868", label="system CPU s (right)")
    ax2.bar(xs, tracer, width, bottom=[u + s for u, s in zip(user, system)], color="#c44e52",
            label="tracer CPU s (right)")
    top = max(vals) if vals and max(vals) > 0 else 1
    for i, s in enumerate(cells):
        if "mean" not in s:
            ax.text(i, top * 0.02, "n/a" if s["status"].startswith("n/a") else "unavailable",
                    rotation=90, ha="center", va="bottom", fontsize=8, color="#555555")
    ax.set_xticks(list(x))
    ax.set_xticklabels(names, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("elapsed (s), lower is better" if unit == "s" else unit + ", higher is better")
    ax2.set_ylabel("CPU seconds")
    ax.set_title(title)
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, fontsize=7, loc="upper right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def draw_all(out_dir, summary):
    """Returns {(workload, phase): relative path of its PNG}."""
    plot_dir = os.path.join(out_dir, "plots")
    os.makedirs(plot_dir, exist_ok=True)
    made = {}
    for w, ph, cells in summary:
        name = "%s-%s.png" % (w.name, ph)
        phase_plot(os.path.join(plot_dir, name), "%s: %s" % (w.name, ph), cells)
        made[(w.name, ph)] = "plots/" + name
    return made
