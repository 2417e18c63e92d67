"""What the example scripts share: a figure drawn without a display, saved where ``--out`` says,
and the command line that takes ``--out``.

Each script stays runnable as ``python examples/<script>.py``: Python puts the script's folder
on ``sys.path``, so ``from _common import ...`` finds this module.
"""

from __future__ import annotations

import argparse
from pathlib import Path

FIGURES = Path("examples/figures")


def subplots(*args, **kwargs):
    """``matplotlib.pyplot.subplots`` on the Agg backend (no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(*args, **kwargs)


def save_figure(fig, out: Path, name: str, dpi: int = 120) -> Path:
    """Lay out ``fig``, write it to ``out/<name>.png`` (``out`` made if missing), say where."""
    fig.tight_layout()
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{name}.png"
    fig.savefig(path, dpi=dpi)
    print(f"figure: {path}")
    return path


def argument_parser() -> argparse.ArgumentParser:
    """The command line of an example: ``--out``, the folder of its figure, and the script's own."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=FIGURES, help="folder of the figure")
    return parser
