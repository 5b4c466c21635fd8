"""The property tier (hypothesis): random kernels compiled and run on the emulator against an
interval oracle (prop_oracle.py). docs/testing-properties.md describes it.

Profiles (TL_ASCEND_HYPOTHESIS_PROFILE, default "ci"):

* ``ci``: a fixed, small budget (the whole tier well under 3 minutes on 2 cores), no deadline, no
  shrinking (each shrink step is a compile), the failing example printed as a reproducer;
* ``nightly``: 200 examples per test with shrinking;
* ``dev``: 25 examples per test with shrinking.

``TL_ASCEND_HYPOTHESIS_EXAMPLES=N`` sets the number of examples of any profile.

Every run is seeded: hypothesis prints the seed of a failing run (`--hypothesis-seed=N` replays
it) and each failure message carries a ``check_*(...)`` line that reproduces it as a plain test.
"""

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

hypothesis = pytest.importorskip("hypothesis", reason="the property tier needs hypothesis (pip install -e '.[dev]')")
from hypothesis import HealthCheck, Phase, settings  # noqa: E402

_common = dict(deadline=None, print_blob=True,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large])
settings.register_profile("ci", max_examples=6, phases=[Phase.explicit, Phase.reuse, Phase.generate],
                          database=None, **_common)
settings.register_profile("nightly", max_examples=200, **_common)
settings.register_profile("dev", max_examples=25, **_common)
settings.load_profile(os.environ.get("TL_ASCEND_HYPOTHESIS_PROFILE", "ci"))
if os.environ.get("TL_ASCEND_HYPOTHESIS_EXAMPLES"):  # a longer run of any profile, e.g. ci without shrinking
    settings.register_profile("custom", settings.default,
                              max_examples=int(os.environ["TL_ASCEND_HYPOTHESIS_EXAMPLES"]))
    settings.load_profile("custom")
