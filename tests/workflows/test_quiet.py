"""Quiet runs (``progressbar=False`` prints nothing) and Ctrl-C (one line, no traceback)."""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import subprocess
import sys
import textwrap
import time
import warnings

import numpy as np
import pymc as pm
import pytest

import pm_evidence as pme
from pm_evidence.core import progress


def _small_model():
    with pm.Model() as model:
        mu = pm.Normal("mu", np.float64(0.0), np.float64(1.0))
        pm.Normal("y", mu, np.float64(1.0), observed=np.array([0.3, -0.1, 0.8]))
    return model


def test_progressbar_false_prints_nothing_and_restores_loggers(capfd, caplog):
    """Nothing on the file descriptors, no log record (PyMC's handler writes to the stream it
    was given at import, which capfd does not see), no warning; PyMC logs again afterwards."""
    model = _small_model()
    caplog.set_level(logging.DEBUG, logger="pymc")
    caplog.set_level(logging.DEBUG, logger="pytensor")
    pymc_logger = logging.getLogger("pymc")
    level_before = pymc_logger.level
    capfd.readouterr()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ev = pme.marginal_likelihood(
            # enough draws for R-hat <= 1.01: a convergence warning would be a legitimate output
            model,
            method="bridge",
            progressbar=False,
            random_seed=1,
            draws=1000,
            tune=500,
            chains=2,
        )
    out, err = capfd.readouterr()
    assert np.isfinite(ev.log_z)
    assert out == ""
    assert err == ""
    shown = [w for w in caught if not issubclass(w.category, DeprecationWarning)]
    assert shown == [], [str(w.message) for w in shown]
    assert [r.getMessage() for r in caplog.records if r.name.startswith("pymc")] == []
    assert pymc_logger.level == level_before
    with model:
        pm.sample(draws=20, tune=20, chains=1, progressbar=False, random_seed=1, nuts_sampler="pymc")
    assert any("NUTS" in r.getMessage() for r in caplog.records)


def test_quiet_restores_levels_after_an_error():
    logger = logging.getLogger("pymc")
    before = logger.level
    with pytest.raises(RuntimeError), progress.quiet(True):
        assert logger.getEffectiveLevel() >= logging.ERROR
        raise RuntimeError
    assert logger.level == before


def test_no_sigint_handler_left_behind():
    model = _small_model()
    before = signal.getsignal(signal.SIGINT)
    pme.marginal_likelihood(
        model, method="bridge", progressbar=False, random_seed=2, draws=100, tune=100, chains=2
    )
    assert signal.getsignal(signal.SIGINT) is before


def test_ctrl_c_swallowed_by_a_c_callback_is_raised_at_the_next_phase():
    """numba's compiler calls back into Python through ctypes; a Ctrl-C there is swallowed."""

    @ctypes.CFUNCTYPE(None)
    def callback():
        raise KeyboardInterrupt

    hook_before = sys.unraisablehook
    with pytest.raises(KeyboardInterrupt) as info, progress.interruptible("rts"):
        with progress.phase("compilation of rts"):
            callback()  # swallowed by ctypes, noted
            reached_after_callback = True
        with progress.phase("tuning kernel"):  # never entered
            pytest.fail("the swallowed Ctrl-C was not raised")
    assert reached_after_callback
    assert info.value.phase == "compilation of rts"
    assert "'rts' interrupted by Ctrl-C during compilation of rts" in str(info.value)
    assert sys.unraisablehook is hook_before


# --------------------------------------------------------------------- SIGINT in a subprocess
CHILD_PRELUDE = """
import logging, sys, time
import numpy as np, pymc as pm
import pm_evidence as pme

with pm.Model() as model:
    mu = pm.Normal("mu", np.float64(0.0), np.float64(1.0), shape=2)
    pm.Normal("y", mu.sum(), np.float64(1.0), observed=np.array([0.3, -0.1, 0.8]))

class Marker(logging.Handler):
    def emit(self, record):
        message = record.getMessage()
        if message.startswith("phase started: "):
            print("PHASE", message.removeprefix("phase started: "), flush=True)

logging.getLogger("pm_evidence.core.progress").addHandler(Marker())
logging.getLogger("pm_evidence.core.progress").setLevel(logging.DEBUG)
"""

CHILDREN = {
    # a compile that takes long: the Ctrl-C lands inside PyTensor's compilation
    "compilation": """
from pytensor.compile import FunctionMaker
create = FunctionMaker.create
def slow_create(self, *args, **kwargs):
    print("PHASE compiling", flush=True)
    time.sleep(120)
    return create(self, *args, **kwargs)
FunctionMaker.create = slow_create
flat = np.zeros((2, 50, 2))
pme.marginal_likelihood(model, method="bridge", idata=flat, progressbar=False)
""",
    "NUTS tuning": """
def first_draw(trace, draw):
    if draw.draw_idx == 0:
        print("PHASE NUTS draw", draw.draw_idx, "tuning" if draw.tuning else "", flush=True)
pme.marginal_likelihood(
    model, method="bridge", progressbar=False, tune=100000, draws=100, chains=2,
    sample_kwargs={"cores": 1, "callback": first_draw},
)
""",
    "pilot run": """
pme.marginal_likelihood(
    model, method="rts", progressbar=False, reference="prior", n_pilot_chains=40_000
)
""",
}
WAIT_FOR = {
    "compilation": "PHASE compiling",
    "NUTS tuning": "PHASE NUTS draw 0 tuning",
    "pilot run": "PHASE pilot run",
}
EXPECTED_PHASE = {
    "compilation": "compilation / set-up of 'bridge'",
    "NUTS tuning": "NUTS tuning",
    "pilot run": "pilot run",
}


def _default_sigint():
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("phase", list(CHILDREN))
def test_ctrl_c_in_a_subprocess_ends_with_one_line(phase, tmp_path):
    script = tmp_path / "child.py"
    script.write_text(textwrap.dedent(CHILD_PRELUDE) + textwrap.dedent(CHILDREN[phase]))
    env = dict(os.environ, PYTHONWARNINGS="ignore::FutureWarning,ignore::DeprecationWarning")
    child = subprocess.Popen(
        [sys.executable, str(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        # a terminal's Ctrl-C: the child starts with SIGINT at its default action whatever the
        # test process has (a child inherits an ignored SIGINT, and Python then keeps ignoring it)
        preexec_fn=_default_sigint,
    )
    try:
        deadline = time.monotonic() + 240
        seen = []
        while time.monotonic() < deadline:
            line = child.stdout.readline()
            if not line:
                break
            seen.append(line.strip())
            if line.startswith(WAIT_FOR[phase]):
                break
        assert seen and seen[-1].startswith(WAIT_FOR[phase]), (seen, child.stderr.read())
        child.send_signal(signal.SIGINT)
        _, err = child.communicate(timeout=240)
    finally:
        if child.poll() is None:
            child.kill()
    lines = [line for line in err.splitlines() if line.strip()]
    assert "Traceback" not in err
    assert len(lines) == 1, err
    assert lines[0].startswith("KeyboardInterrupt: pm_evidence:")
    assert f"during {EXPECTED_PHASE[phase]}" in lines[0]
    assert child.returncode in (-signal.SIGINT, 128 + signal.SIGINT)
