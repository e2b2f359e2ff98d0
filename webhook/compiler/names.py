"""Deterministic object names: the algorithms of the Job controller's ``computeWorkloadName``
and ``computePodGroupName`` (``kubernetes/kubernetes`` ``pkg/controller/job/job_scheduling_manager.go``).

At component-helpers ``1961876b9c57`` the library has no naming helper; for a while it had one
(``workloadbuilder/names.go`` in ``kubernetes/kubernetes`` staging at ``903246fe``, with
``GenerateWorkloadName`` / ``GeneratePodGroupName`` and their test vectors), which moved the
controller's private copies out unchanged. wasp keeps that revision's names and its handling
of empty inputs (a bare hash, where the controller would never pass an empty name).

The algorithms are reproduced byte for byte so that wasp computes the same names that
the in-tree controllers persist: 32-bit FNV-1a over the inputs, the decimal hash run
through apimachinery's ``SafeEncodeString`` alphabet, and names cut to fit a DNS-1123
subdomain (253 characters).
"""

from __future__ import annotations

__all__ = ["MAX_NAME_LENGTH", "generate_pod_group_name", "generate_workload_name"]

MAX_NAME_LENGTH = 253  # DNS-1123 subdomain

_FNV_OFFSET = 2166136261
_FNV_PRIME = 16777619
# k8s.io/apimachinery/pkg/util/rand: vowels and look-alike characters removed.
_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def _fnv1a_32(data: bytes) -> int:
    h = _FNV_OFFSET
    for byte in data:
        h ^= byte
        h = (h * _FNV_PRIME) & 0xFFFFFFFF
    return h


def _encode(n: int) -> str:
    return "".join(_ALPHABET[ord(ch) % len(_ALPHABET)] for ch in str(n))


def generate_workload_name(owner_name: str, owner_uid: str) -> str:
    """``<owner>-<hash(uid)>``, or just the hash when ``owner_name`` is empty.

    The hash input is ``(types.UID)<uid>``: that is how Go's hashing dump renders a
    ``types.UID``, and names already persisted by controllers depend on it.
    """
    h = _encode(_fnv1a_32(f"(types.UID){owner_uid}".encode()))
    if not owner_name:
        return h
    return f"{owner_name[: MAX_NAME_LENGTH - len(h) - 1]}-{h}"


def generate_pod_group_name(workload_name: str, template_name: str) -> str:
    """``<workload>-<template>-<hash(workload+template)>``, cut fairly to 253 characters."""
    h = _encode(_fnv1a_32(workload_name.encode() + template_name.encode()))
    w, tn = workload_name, template_name
    if not w and not tn:
        return h
    if not w or not tn:
        only = w or tn
        return f"{only[: MAX_NAME_LENGTH - len(h) - 1]}-{h}"
    budget = MAX_NAME_LENGTH - len(h) - 2
    if len(w) + len(tn) > budget:
        half = budget // 2
        if len(w) <= half:
            tn = tn[: budget - len(w)]
        elif len(tn) <= half:
            w = w[: budget - len(tn)]
        else:
            w, tn = w[: budget - half], tn[:half]
    return f"{w}-{tn}-{h}"
