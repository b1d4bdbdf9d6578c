"""The runtime companion in the e2e image: loader_kwargs under Docker's defaults and under the
generated flags, and the shm watch warning before a real loader dies of a small /dev/shm."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from envkit.planner import build_plan
from envkit.profile import load_profile
from envkit.plan.runsettings import RunSettings
from tests.docs.runtime_blocks import check_block

pytestmark = [pytest.mark.docker, pytest.mark.slow]

# The NGC-style workload of tests/e2e/conftest.py: 32 x 3x224x224 float32 (18.4 MiB a batch).
LOAD = """
import json, sys, warnings
warnings.filterwarnings("ignore", message="Failed to initialize NumPy")  # this image has no numpy
import torch
from envkit_runtime import loader_kwargs

class Images:
    def __len__(self):
        return 32 * 6
    def __getitem__(self, i):
        return torch.rand(3, 224, 224), i

kw = loader_kwargs()  # batch size, shapes and wishes from the profile's expectation in /opt/envkit
n = sum(len(y) for _, y in torch.utils.data.DataLoader(Images(), **kw))
print(json.dumps({"kwargs": dict(kw), "budget": kw.budget, "samples": n}))
print(kw.explain(), file=sys.stderr)
"""

LEAK = """
import sys, time, torch
from torch.utils.data import DataLoader

class Frames:
    def __len__(self):
        return 100000
    def __getitem__(self, i):
        return torch.ones(3, 256, 256)  # 768 KiB

held = []
try:
    for batch in DataLoader(Frames(), batch_size=2, num_workers=1, prefetch_factor=1):
        held.append(batch)  # the bug: every batch stays referenced, so its shm segment stays
        print(f"TRAIN step {len(held)} t={time.time():.3f}", file=sys.stderr, flush=True)
        time.sleep(0.1)
except Exception as exc:
    print(f"TRAIN died t={time.time():.3f} {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
    sys.exit(1)
"""


def _run(engine, image, settings, script, timeout=300):
    res = engine.run(image, ["python3", "-c", script], settings, timeout=timeout)
    assert res.exit_code == 0, res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1]), res.stderr


def test_loader_kwargs_fit_docker_default_shm_and_give_the_profile_settings_under_the_flags(engine, e2e_image, e2e_dir, golden):
    default, why = _run(engine, e2e_image, RunSettings.engine_defaults(), LOAD)
    assert default["samples"] == 192  # loaded without a shm error
    assert default["budget"]["shm_free_bytes"] <= 64 * 2**20
    assert default["budget"]["shm_need_bytes"] <= default["budget"]["shm_free_bytes"]
    assert (default["kwargs"]["num_workers"], default["kwargs"]["prefetch_factor"]) == (1, 1), why
    assert "raise --shm-size" in why
    check_block(golden, "explain-default-shm", f"$ docker run --rm {e2e_image} python3 train.py   # no flags\n{why}", masked=True)

    rs = build_plan(load_profile(e2e_dir / "envkit.yaml")).settings
    generated, why = _run(engine, e2e_image, replace(rs, volumes=()), LOAD)
    assert generated["samples"] == 192
    assert generated["kwargs"] == {"batch_size": 32, "num_workers": 2, "prefetch_factor": 2,
                                   "persistent_workers": True, "pin_memory": False}, why
    assert generated["budget"]["expect"] == "/opt/envkit/envkit_expect.json"
    check_block(golden, "kwargs-generated", json.dumps(generated["kwargs"]))


def test_watch_warns_before_a_small_shm_kills_the_loader(engine, e2e_image, golden):
    cmd = ('python3 -c "$LEAK" & python3 -m envkit_runtime watch --pid $! --interval 0.1 --json; '
           'wait $!; echo "TRAIN rc=$?" >&2')
    res = engine.run(e2e_image, ["bash", "-c", cmd],
                     replace(RunSettings.engine_defaults(), shm_size=32 * 2**20, env=(("LEAK", LEAK),)), timeout=300)
    samples = [json.loads(x) for x in res.stdout.splitlines() if x.startswith("{")]
    train = [x for x in res.stderr.splitlines() if x.startswith("TRAIN")]
    died = [x for x in train if x.startswith("TRAIN died")]
    assert died and train[-1] == "TRAIN rc=1", res.stderr[-3000:]
    died_at = float(died[0].split("t=")[1].split()[0])
    warned = [s for s in samples if "warning" in s]
    assert len(warned) == 1, samples[-3:]
    assert warned[0]["t"] < died_at and warned[0]["workers"] == 1
    assert "--shm-size" in warned[0]["warning"] and warned[0]["shm_size"] == 32 * 2**20
    shown = {k: warned[0][k] for k in ("t", "shm_size", "shm_used", "workers", "workers_rss", "warning")}
    check_block(golden, "watch-warning", json.dumps(shown) + "\n" + died[0], masked=True)
