"""Where things live: inside the image, and in the build context beside the Dockerfile.

Every target, ``envkit validate``, ``envkit lock`` and the harness commands name these paths
from here, so the Dockerfile that puts a file somewhere and the command that runs it agree.

Example:
    >>> CHECK_PATH, ENTRYPOINT_PATH
    ('/usr/local/bin/envkit-check', '/usr/local/bin/envkit-entrypoint')
"""

from __future__ import annotations

import posixpath

from envkit.locations import LOCK_FILE_NAME, SHM_MOUNT  # noqa: F401 (re-exported: the profile reads them too)

VENV = "/opt/venv"
HARNESS_DIR = "/opt/envkit"
HARNESS_FILE = "envkit_harness.pyz"
EXPECT_FILE = "envkit_expect.json"
CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"
# Copies of the profile's certificates, wheelhouses, requirement files, lock and code go under a folder
# of envkit's own, so generating into the profile's folder never writes into the user's certs/ or wheels/.
CONTEXT_DIR = ".envkit"
# envkit's record of what it wrote into an output folder (envkit.output).
MANIFEST = ".envkit-manifest.json"
CHECK_FILE = "envkit-check"
CHECK_PATH = f"/usr/local/bin/{CHECK_FILE}"
ENTRYPOINT_FILE = "envkit-entrypoint"
ENTRYPOINT_PATH = posixpath.join(posixpath.dirname(CHECK_PATH), ENTRYPOINT_FILE)  # beside envkit-check: one COPY
# The packages stage's delta: what the profile's packages added over torch's environment, as a tree to
# copy onto the venv, and the list of paths they removed, deleted in the final stage.
DELTA_DIR = "/opt/envkit-delta"
REMOVED_LIST = ".envkit-removed"
# The script that takes that delta (templates/envkit-delta.sh), in the build context and in the packages stage's BUILD_DIR.
DELTA_SCRIPT = "envkit-delta.sh"
BUILD_DIR = "/opt/envkit-build"
WHEELS_IN_IMAGE = "/tmp/envkit-wheels"
# The direct layout's uv and torch pin live in /tmp for one RUN each; the requirement files and the
# lock it installs stay beside the harness, a few KB that say what the image was built from.
UV_IN_RUN = "/tmp/envkit-uv"
CONSTRAINTS_IN_RUN = "/tmp/envkit-constraints.txt"
SEED_IN_RUN = "/tmp/envkit-seed.txt"
