"""benchmarks/gpu.py, the one prepared script a GPU session runs: every model it names builds,
with the parameters its docstring gives, so that no device time goes to a script that fails."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pm_evidence
from pm_evidence.model.layout import Layout

SCRIPT = Path(pm_evidence.__file__).parent.parent / "benchmarks" / "gpu.py"


def _script():
    spec = importlib.util.spec_from_file_location("gpu_benchmark", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_model_of_the_gpu_benchmark_builds():
    gpu = _script()
    dims = {name: Layout.from_model(gpu.build_model(name)).dim for name in gpu.MODELS}
    assert dims == {
        "eight_schools": 10, "eight_schools_centered": 10, "poisson_glmm": 102,
        "hierarchical_200": 202, "logistic_100k": 21, "rv_gp": 16, "hierarchical_1000": 1002,
    }  # fmt: skip
