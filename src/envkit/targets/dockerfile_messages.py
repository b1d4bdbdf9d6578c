"""Every line the Dockerfile's RUN steps print to a user: the failure texts and the progress notes.

One place, so the wording of the direct and staged layouts is read (and changed) side by side.
Each text is the body of a shell double-quoted string: ``$(cat FILE)`` in it is expanded by the
RUN that prints it (it names the torch pin the failed install was constrained to), and it holds no
``"``, backquote or backslash.

Example:
    >>> print(packages_failed("image.pip_packages", None))
    envkit: installing image.pip_packages failed (the installer's reason is above).
    >>> print(requirements_failed("r.txt", hashes=False, constraint="it"))
    envkit: installing r.txt (image.requirements) failed (the installer's reason is above); every install after torch is constrained to it.
"""

from __future__ import annotations

_REASON_ABOVE = "(the installer's reason is above)"


def lock_failed(lock_file: str) -> str:
    """The lock's install failed: most likely a hash mismatch, which is a question of trust."""
    return (f"envkit: installing {lock_file} failed {_REASON_ABOVE}. A hash mismatch means a file is not the one "
            "that was locked: a tampered or re-published package, or a lock edited by hand; run envkit lock again "
            "only if you trust the new file.")


def requirements_failed(name: str, hashes: bool, constraint: str | None) -> str:
    """One of image.requirements failed. ``constraint``: how the text names the torch pin every install after
    torch is constrained to (``it``, or ``$(cat FILE)`` where no earlier line printed it), None without torch."""
    text = f"envkit: installing {name} (image.requirements) failed {_REASON_ABOVE}"
    if hashes:
        text += ": a hash mismatch means a file is not the one the requirements file pinned"
    if constraint:
        text += f"; every install after torch is constrained to {constraint}"
    return text + "."


def packages_failed(what: str, pin_file: str | None) -> str:
    """image.pip_packages (or torch's numpy) failed; ``pin_file``: the torch pin they were constrained to."""
    text = f"envkit: installing {what} failed {_REASON_ABOVE}."
    if pin_file:
        text += (f" Every install after torch is constrained to $(cat {pin_file}): a package that needs another torch"
                 " fails here instead of replacing it; change image.torch or that package's version.")
    return text


def constrained_note(pin_file: str, later: bool) -> str:
    """The progress note after torch: the pin every install in this RUN (or every ``later`` one) is constrained to."""
    return f"envkit: every {'later install' if later else 'install here'} is constrained to $(cat {pin_file})"


PACKAGES_NOTE = "envkit: installing the profile's packages"
