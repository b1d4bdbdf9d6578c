"""The places both the profile and the plan name, defined below both.

The profile reads the lock beside it and refuses a volume over the pod's ``/dev/shm``; the plan lays
the image out with the same names (:mod:`envkit.plan.paths` re-exports them). Here, so the profile
imports nothing from the plan, which sits above it.

Example:
    >>> LOCK_FILE_NAME, SHM_MOUNT
    ('envkit.lock.txt', '/dev/shm')
"""

from __future__ import annotations

# The lock `envkit lock` writes beside the profile, and its copy in the build context.
LOCK_FILE_NAME = "envkit.lock.txt"
# Where the Kubernetes targets mount the pod's Memory emptyDir (run.shm_size's size); no claim may take it.
SHM_MOUNT = "/dev/shm"
