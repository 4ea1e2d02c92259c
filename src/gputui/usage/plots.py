"""The report's terminal plots: utilisation, memory, power and temperature over time.

Drawn with plotext 5 (the `plots` extra): a pure-Python library with no dependencies of
its own, the same one textual-plotext draws Textual widgets with. Without it the
report prints its tables and one line saying how to get the plots.
"""

from __future__ import annotations

from gputui.usage.summary import RunSummary

INSTALL_HINT = "plots: install the plots extra (pip install 'gputui[plots]') to draw them"
TITLES = {
    "util": "Utilisation %",
    "memory": "Memory used GiB",
    "power": "Power W",
    "temperature": "Temperature °C",
}


def plots_available() -> bool:
    try:
        import plotext  # noqa: F401
    except ImportError:
        return False
    return True


def render_plots(
    run: RunSummary, *, width: int = 100, height: int = 14, color: bool = False
) -> str:
    """One plot per metric, one line per GPU, x in minutes since the run's start."""
    import plotext as plt

    if run.start is None:
        return ""
    out = []
    for metric, title in TITLES.items():
        per_gpu = run.series.get(metric, {})
        if not any(per_gpu.values()):
            out.append(f"{title}: unknown for every GPU")
            continue
        plt.clf()
        plt.plotsize(width, height)
        plt.theme("pro" if color else "clear")
        for index, points in per_gpu.items():
            if points:
                xs = [(t - run.start) / 60 for t, _ in points]
                plt.plot(xs, [v for _, v in points], label=f"GPU {index}")
        plt.title(title)
        plt.xlabel("minutes since the start")
        text = plt.build()
        out.append(text if color else plt.uncolorize(text))
    return "\n\n".join(s.rstrip("\n") for s in out) + "\n"
