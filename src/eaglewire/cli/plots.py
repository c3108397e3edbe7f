"""PNG plots and the HTML report page (matplotlib, headless)."""

from __future__ import annotations

import html
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt


def acceptance_plot(
    path: Path,
    curves: dict[str, list[float]],
    title: str,
    ylabel: str = "conditional acceptance",
    xlabel: str = "draft step k (0 = first drafted token)",
    x0: int = 0,
    ylim: tuple | None = (0, 1),
) -> Path:
    """Per-step curves for several wirings (e.g. served vs fixed taps)."""
    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=110)
    for label, ys in curves.items():
        ax.plot(range(x0, x0 + len(ys)), ys, marker="o", label=label)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if ylim:
        ax.set_ylim(*ylim)
    ax.set_xticks(range(x0, x0 + max((len(v) for v in curves.values()), default=1)))
    ax.grid(alpha=0.3)
    ax.set_title(title, fontsize=10)
    ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def heatmap_plot(path: Path, values, title: str, marked: dict[str, list[int]] | None = None) -> Path:
    """slot x tap heatmap of step-0 accuracy; `marked` draws the named wirings (e.g. best, served) on top."""
    import numpy as np

    data = np.array(values, dtype=float)
    slots, taps = data.shape
    fig, ax = plt.subplots(figsize=(max(6.0, 0.35 * taps + 2), 1.0 + 0.8 * slots), dpi=110)
    im = ax.imshow(
        data, aspect="auto", cmap="viridis", vmin=np.nanmin(data) if np.isfinite(data).any() else 0
    )
    ax.set_xlabel(
        "tap h<k> fed to the slot (other slots at the best wiring; blank: tap used by another slot)",
        fontsize=8,
    )
    ax.set_ylabel("fc slot (ascending)")
    ax.set_xticks(range(taps))
    ax.set_xticklabels(
        [f"h{k}" for k in range(taps)], rotation=90 if taps > 20 else 0, fontsize=7 if taps > 20 else 9
    )
    ax.set_yticks(range(slots))
    markers = {"best": ("o", "black"), "served": ("x", "red"), "trained": ("s", "orange")}
    for name, wiring in (marked or {}).items():
        m, c = markers.get(name, ("^", "cyan"))
        xs, ys = sorted(wiring), range(len(wiring))
        if m in "os":
            ax.scatter(xs, ys, marker=m, s=90, label=name, facecolors="none", edgecolors=c, linewidths=2)
        else:
            ax.scatter(xs, ys, marker=m, s=70, label=name, color=c, linewidths=2)
    if marked:
        ax.legend(loc="upper left", bbox_to_anchor=(1.15, 1.0), fontsize=8)
    fig.colorbar(im, ax=ax, label="step-0 accuracy")
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def bar_plot(
    path: Path,
    labels: list[str],
    values: list[float],
    ylabel: str,
    title: str,
    annotate: list[str] | None = None,
    xlabel: str = "method",
) -> Path:
    fig, ax = plt.subplots(figsize=(max(6.0, 0.9 * len(labels) + 2), 4.4), dpi=110)
    bars = ax.bar(range(len(labels)), values, color="#4C72B0")
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=20, ha="right", fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_xlabel(xlabel)
    ax.set_title(title)
    ax.set_ylim(0, max(values, default=1.0) * 1.2 or 1.0)  # room for the annotations under the title
    ax.grid(axis="y", alpha=0.3)
    for b, text in zip(bars, annotate or [f"{v:.2f}" for v in values], strict=False):
        ax.annotate(
            text, (b.get_x() + b.get_width() / 2, b.get_height()), ha="center", va="bottom", fontsize=8
        )
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def bench_plot(rep, out: Path) -> list[Path]:
    """decode.json and decode.png for a decoding BenchReport."""
    out.mkdir(parents=True, exist_ok=True)
    data = rep.to_dict()
    (out / "decode.json").write_text(json.dumps(data, indent=2))
    rows = data["methods"]
    png = bar_plot(
        out / "decode.png",
        [r["method"] for r in rows],
        [r["tokens_per_second_median"] for r in rows],
        "tokens/s (median)",
        f"Greedy decoding on {Path(rep.target).name} ({data['target_dtype']}): {data['prompts']} prompts, "
        f"{data['max_new_tokens']} new tokens, {data['threads']} threads",
        [
            f"{r['tokens_per_second_median']:.0f} ({r['speedup']:.2f}x)\n"
            + (f"tau {r['tau_median']:.2f}" if r["tau_median"] else "")
            for r in rows
        ],
    )
    return [out / "decode.json", png]


def html_page(path: Path, title: str, sections: list[tuple[str, str]], images: list[str], data: dict) -> Path:
    """A self-contained page: text sections, the PNGs (relative paths) and the JSON report."""
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>",
        "<style>body{font-family:sans-serif;max-width:1000px;margin:2em auto;line-height:1.4}"
        "pre{background:#f4f4f4;padding:1em;overflow:auto;white-space:pre-wrap}.bad{color:#b00}.ok{color:#070}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
    ]
    for heading, body in sections:
        parts.append(f"<h2>{html.escape(heading)}</h2><pre>{html.escape(body)}</pre>")
    for img in images:
        parts.append(f"<p><img src='{html.escape(img)}' style='max-width:100%'></p>")
    parts.append(
        "<h2>Report (JSON)</h2><pre>"
        + html.escape(json.dumps(data, indent=2, default=str))
        + "</pre></body></html>"
    )
    path.write_text("\n".join(parts))
    return path


def _taps_fix(rep) -> str:
    if rep.fix is not None:
        return f"after the fix: {rep.fixed_taps}"
    if rep.served is not None and rep.trained is not None and rep.served == rep.trained:
        return "the served taps are the trained ones: no taps fix"
    return "no taps fix (the verdict says why)"


def doctor_report(rep, out: Path) -> list[Path]:
    """PNGs (per-step acceptance of trained vs served taps, the search heatmap) and an HTML page."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    chains = {name: ev for name, ev in rep.evals.items() if ev.mode == "chain" and ev.walks}
    if chains:
        curves = {f"{name} taps {ev.wiring}": ev.per_position for name, ev in chains.items()}
        title = "Acceptance per draft position as an engine counts it (accepted at i / drafts)"
        written.append(
            acceptance_plot(
                out / "acceptance.png", curves, title, "accepted at position i / drafts", "draft position i"
            )
        )
        taus = {f"{name} taps {ev.wiring}": ev.tau for name, ev in chains.items()}
        steps = max(len(v) for v in taus.values())
        written.append(
            acceptance_plot(
                out / "predicted_tau.png",
                taus,
                "Predicted accept length along the engine's walk (bonus token included)",
                "accept length",
                "draft tokens per verify (K)",
                x0=1,
                ylim=(1, steps + 1),
            )
        )
    if rep.search is not None:
        marked = {"best": list(rep.search.best.wiring.indices)}
        if rep.served is not None:
            marked["served"] = list(rep.served.indices)
        written.append(
            heatmap_plot(
                out / "wiring_heatmap.png",
                rep.search.heatmap.tolist(),
                "Step-0 accuracy when fc slot j is fed tap h<k>",
                marked,
            )
        )
    live = getattr(rep, "live", None)
    if live is not None and live.measurement.per_position:
        curves = {"measured on the live server": live.measurement.per_position}
        for c in live.prediction.curves.values() if live.prediction is not None else []:
            if c.per_position:
                curves[f"predicted: {c.label} {c.wiring}"] = c.per_position
        written.append(
            acceptance_plot(
                out / "live_per_position.png",
                curves,
                f"Live server {live.server.url}: per-position acceptance",
                "acceptance (engine's counting)",
                "draft position i",
            )
        )
    data = rep.to_dict()
    sections = [
        (
            "Verdict",
            rep.verdict.upper() + "\n" + "\n".join(rep.problems + [f"unknown: {u}" for u in rep.unknowns]),
        ),
        (
            "Taps",
            f"served: {rep.served}\ntrained: {rep.trained or 'unknown'} ({rep.trained_basis})\n"
            + _taps_fix(rep),
        ),
    ]
    if rep.fix is not None:
        fix = {k: v for k, v in rep.fix_dict().items() if k != "config"}
        sections.append(("Fix", json.dumps(fix, indent=2)))
    written.append(
        html_page(
            out / "index.html", f"eaglewire doctor: {rep.drafter}", sections, [p.name for p in written], data
        )
    )
    (out / "report.json").write_text(json.dumps(data, indent=2, default=str))
    return written


def probe_report(rep, out: Path) -> list[Path]:
    """The probe's page: per-position acceptance measured (with its interval) against each prediction, the
    accept length by draft tokens, and the JSON report."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    m, p, d = rep.measurement, rep.prediction, rep.diagnosis
    if m.per_position:
        curves = {"measured (server counters)": m.per_position}
        if p is not None:
            for c in p.curves.values():
                if c.per_position:
                    curves[f"predicted: {c.label} {c.wiring}"] = c.per_position
        fig_path = out / "per_position.png"
        acceptance_plot(
            fig_path, curves, "Per-position acceptance: accepted at position i / drafts",
            "acceptance (engine's counting)", "draft position i",
        )  # fmt: skip
        written.append(fig_path)
    if p is not None and p.walk and m.accept_length is not None:
        curves = {f"{c.label} {c.wiring}": c.tau for c in p.curves.values() if c.tau}
        if curves:
            steps = max(len(v) for v in curves.values())
            path = out / "accept_length.png"
            acceptance_plot(
                path, curves, f"Accept length along the engine's walk; measured {m.accept_length:.2f} at K={p.k}",
                "accept length (bonus included)", "draft tokens per verify K", x0=1, ylim=(1, steps + 1),
            )  # fmt: skip
            written.append(path)
    data = rep.to_dict()
    lines = [f"{d.name.upper()}: {d.summary}", *d.notes, *(f"to decide: {n}" for n in d.needs)]
    if d.config_fix is not None and d.config_fix.expressible:
        lines.append(f"fix for {d.fix_engine}: set {d.config_fix.key} = {d.config_fix.value} in config.json")
    lines += [f"fix (flags): {f}" for f in d.flag_fixes]
    measured = f"accept length {m.accept_length:.3f}" if m.accept_length is not None else "no verify step"
    if m.accept_length_ci:
        measured += f" (95% CI {m.accept_length_ci[0]:.3f}..{m.accept_length_ci[1]:.3f}; {m.ci_method})"
    sections = [("Diagnosis", "\n".join(lines)), ("Measured", measured)]
    if d.comparisons:
        rows = [
            f"{c.label} {c.taps}: {c.predicted:.3f} ({c.difference:+.3f} measured-predicted, tolerance {c.tolerance:.3f})"
            for c in d.comparisons
        ]
        sections.append(("Predicted", "\n".join(rows)))
    written.append(
        html_page(
            out / "index.html",
            f"eaglewire probe: {rep.server.url}",
            sections,
            [x.name for x in written],
            data,
        )
    )
    (out / "report.json").write_text(json.dumps(data, indent=2, default=str))
    return written
