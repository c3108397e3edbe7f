"""SGLang's serving failures (rules/serving.py): a kind of target a release cannot serve an EAGLE-3 drafter beside,
whatever the drafter's ids."""

from __future__ import annotations

from eaglewire.rules.serving import ServingFailure

ROWS: tuple[ServingFailure, ...] = (
    ServingFailure(
        name="sglang.longcat-flash-rope-parameters",
        engine="sglang",
        versions=">=0.5.17",
        platform="*",
        stage="load",
        words="TypeError: argument of type 'NoneType' is not iterable",
        why="SGLang loads every LongCat checkpoint with its own LongcatFlashConfig, which sets `rope_scaling` after "
        "PretrainedConfig.__init__; under the transformers 5 these releases pin (5.12.1, 5.19.0) that property's "
        "setter stores it as `rope_parameters`, so a checkpoint without rope_scaling leaves rope_parameters None, "
        'and each decoder layer\'s build tests `"rope_theta" in getattr(config, "rope_parameters", {})`: the '
        "target does not load, with or without a drafter",
        source="sglang 0.5.17-0.5.23 models/longcat_flash.py (LongcatFlashDecoderLayer.__init__: rope_theta=...), "
        "configs/longcat_flash.py:101-102, utils/hf_transformers/config.py (_try_load_longcat_config); executed "
        "here: 0.5.23's LongcatFlashConfig under transformers 5.19.0 leaves rope_parameters None, and 0.5.21's and "
        "0.5.23's layer builds raised this error in the capture probe's real-layer run",
        architectures=("LongcatFlashForCausalLM",),
        unless_keys=("rope_scaling", "rope_parameters"),
        alone=True,
        fix="a LongCat-Flash config.json with a `rope_scaling` entry (its YaRN variants carry one), or SGLang 0.5.16 "
        "or earlier (its layers read config.rope_theta)",
        checked=("0.5.17", "0.5.18", "0.5.19", "0.5.20", "0.5.21", "0.5.22", "0.5.23"),
    ),
)
