"""Stub until the WSL checks land."""


def wsl_warnings(profile):
    return []
