"""CSV, Markdown and the summary the plots are drawn from.

results.csv has one row per run of a phase (and one per phase of a configuration that did not
run, with its reason); summary.csv one row per (workload, phase, configuration) with the mean,
the 95% confidence half-width (Student's t, as the paper reported), the ratio to VANILLA in the
same run, and the paper's ratio beside it.
"""

import csv
import math
import os
import statistics

FIELDS = ["workload", "phase", "config", "rep", "status", "metric", "unit", "value", "ops",
          "seconds", "elapsed", "user", "system", "monitor_user", "monitor_system",
          "monitor_busy", "stops", "monitor_peak_kib", "regions_kib", "fs", "extra"]

# Two-sided 95% Student t quantiles by degrees of freedom.
_T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
        9: 2.262, 10: 2.228, 15: 2.131, 20: 2.086, 30: 2.042}


def t95(df):
    for k in sorted(_T95):
        if df <= k:
            return _T95[k]
    return 1.96


class Results:
    def __init__(self, out_dir):
        self.rows = []
        self.path = os.path.join(out_dir, "results.csv")
        with open(self.path, "w", newline="") as f:
            csv.writer(f).writerow(FIELDS)

    def add(self, row):
        row = {k: ("" if row.get(k) is None else row.get(k)) for k in FIELDS}
        self.rows.append(row)
        with open(self.path, "a", newline="") as f:  # written as we go: an interrupted run keeps
            csv.DictWriter(f, FIELDS).writerow(row)  # everything measured so far


def load_paper(path):
    """{(workload family, phase, config): row} from bench/paper.csv."""
    out = {}
    if not os.path.exists(path):
        return out
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            out[(row["workload"], row["phase"], row["config"])] = row
    return out


def paper_cell(row):
    if not row or not row.get("ratio"):
        return ""
    r = float(row["ratio"])
    text = _ratio(r)
    if row.get("relative_to") and row["relative_to"] != "VANILLA":
        text += " of %s" % row["relative_to"]
    return text


def _ratio(r):
    return "%.3g" % r if r < 0.1 else "%.2f" % r if r < 10 else "%.1f" % r


def summarize(rows, workloads, configs):
    """[(workload, phase, [summary dict per config])] in table order."""
    out = []
    for w in workloads:
        phases = []
        for r in rows:
            if r["workload"] == w.name and r["phase"] not in phases:
                phases.append(r["phase"])
        for ph in phases:
            cells = []
            for c in configs:
                mine = [r for r in rows if (r["workload"], r["phase"], r["config"]) ==
                        (w.name, ph, c.name)]
                ok = [r for r in mine if r["status"] == "ok"]
                s = {"config": c, "runs": len(ok), "status": "ok" if ok else (
                    mine[0]["status"] if mine else "not run"), "rows": mine}
                if ok:
                    vals = [float(r["value"]) for r in ok]
                    s["mean"] = statistics.mean(vals)
                    s["ci"] = (t95(len(vals) - 1) * statistics.stdev(vals) / math.sqrt(len(vals))
                               if len(vals) > 1 else None)
                    for k in ("user", "system", "monitor_user", "monitor_system", "elapsed"):
                        s[k] = statistics.mean(float(r[k]) for r in ok)
                    busy = [float(r["monitor_busy"]) for r in ok if r["monitor_busy"] != ""]
                    s["monitor_busy"] = statistics.mean(busy) if busy else None
                    for k in ("monitor_peak_kib", "regions_kib"):  # absent in older runs
                        got = [float(r[k]) / 1024 for r in ok if r.get(k) not in (None, "")]
                        s[k.replace("_kib", "_mib")] = statistics.mean(got) if got else None
                    s["metric"], s["unit"] = ok[0]["metric"], ok[0]["unit"]
                    failed = [r for r in mine if r["status"] != "ok"]
                    if failed:
                        s["status"] = "ok (%d of %d runs failed: %s)" % (
                            len(failed), len(mine), failed[0]["status"])
                cells.append(s)
            base = next((s for s in cells if s["config"].name == "VANILLA" and "mean" in s), None)
            for s in cells:
                if base and "mean" in s and base["mean"] > 0:
                    s["ratio"] = s["mean"] / base["mean"]
            out.append((w, ph, cells))
    return out


def write_summary_csv(path, summary, paper):
    with open(path, "w", newline="") as f:
        wr = csv.writer(f)
        wr.writerow(["workload", "phase", "config", "status", "runs", "metric", "unit", "mean",
                     "ci95", "ratio_to_vanilla", "paper_ratio", "paper_relative_to", "user",
                     "system", "monitor_user", "monitor_system", "monitor_busy",
                     "monitor_peak_mib", "regions_mib"])
        for w, ph, cells in summary:
            for s in cells:
                p = paper.get((w.family, ph, s["config"].paper)) if s["config"].paper else None
                wr.writerow([w.name, ph, s["config"].name, s["status"], s["runs"],
                             s.get("metric", ""), s.get("unit", ""), _num(s.get("mean")),
                             _num(s.get("ci")), _num(s.get("ratio")), p["ratio"] if p else "",
                             p["relative_to"] if p else "", _num(s.get("user")),
                             _num(s.get("system")), _num(s.get("monitor_user")),
                             _num(s.get("monitor_system")), _num(s.get("monitor_busy")),
                             _num(s.get("monitor_peak_mib")), _num(s.get("regions_mib"))])


def _num(x):
    return "" if x is None else "%.6g" % x


def _fmt(x):
    if x >= 100:
        return "{:,.0f}".format(x)
    if x >= 10:
        return "%.1f" % x
    return "%.3g" % x


def markdown(meta, machine, configs, availability, workloads, summary, paper, plots):
    L = ["# Amino file-system benchmarks", ""]
    L += ["`%s`" % meta["command"], "",
          "Started %s, %s scale, %d repetition%s per configuration, took %s." % (
              meta["started"], meta["scale"], meta["reps"], "" if meta["reps"] == 1 else "s",
              meta["duration"]), ""]
    L += ["## Machine", "", "| | |", "|---|---|"]
    L += ["| %s | %s |" % (k, v) for k, v in machine]
    L += ["", "## Configurations", "",
          "| configuration | what runs | guarantees | here |", "|---|---|---|---|"]
    for c in configs:
        why = availability.get(c.name)
        L.append("| %s | %s | %s | %s |" % (c.name, c.summary, c.guarantees, why or "measured"))
    L += ["", "## Workloads", ""]
    L += ["- **%s**: %s" % (w.name, w.describe) for w in workloads]
    L += ["", "## Results", "",
          "Mean of the repetitions ± the 95% confidence half-width. For rates (tps, ops/s, "
          "msg/s) higher is better; for times (s) lower is better. *ratio* is the mean over "
          "VANILLA's mean in this run; *paper* is the ratio the Amino paper published for the "
          "same configuration (bench/paper.csv; its Postmark figures come from the time-limited "
          "Postmark that pmgen reproduces). CPU is seconds per run: the workload's user and "
          "system time, and the tracer's own (strace's or the monitor's) CPU time; *busy* is "
          "the time `amino run --stats` reports in its stop handling.", ""]
    for w, ph, cells in summary:
        L += ["### %s: %s" % (w.name, ph), ""]
        if (w.name, ph) in plots:
            L += ["![%s %s](%s)" % (w.name, ph, plots[(w.name, ph)]), ""]
        L += ["| configuration | result | ratio | paper | CPU user / sys / tracer (s) | busy (s) "
              "| monitor peak / regions (MiB) | runs |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
        for s in cells:
            c = s["config"]
            p = paper.get((w.family, ph, c.paper)) if c.paper else None
            if "mean" in s:
                res = "%s %s" % (_fmt(s["mean"]), s["unit"])
                if s.get("ci") is not None:
                    res += " ± %s" % _fmt(s["ci"])
                cpu = "%.2f / %.2f / %.2f" % (s["user"], s["system"],
                                              s["monitor_user"] + s["monitor_system"])
                busy = "%.2f" % s["monitor_busy"] if s["monitor_busy"] is not None else ""
                memory = ""
                if s.get("monitor_peak_mib") is not None:
                    memory = "%.0f" % s["monitor_peak_mib"]
                    if s.get("regions_mib") is not None:
                        memory += " / %.0f" % s["regions_mib"]
                ratio = _ratio(s["ratio"]) if "ratio" in s else ""
                note = "" if s["status"] == "ok" else " (%s)" % s["status"]
                L.append("| %s | %s%s | %s | %s | %s | %s | %s | %d |" % (
                    c.name, res, note, ratio, paper_cell(p), cpu, busy, memory, s["runs"]))
            else:
                status = s["status"]
                if status == availability.get(c.name):  # the reason is in the table above
                    status = status.split(":")[0] + " (see Configurations)"
                L.append("| %s | %s | | %s | | | | 0 |" % (c.name, status, paper_cell(p)))
        L.append("")
    L += ["## Method", ""] + ["- " + n for n in meta["notes"]] + [""]
    return "\n".join(L)
