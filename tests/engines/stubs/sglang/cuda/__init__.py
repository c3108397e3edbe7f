"""A placeholder `cuda` (NVIDIA's cuda-python bindings, GPU-only) for the SGLang model-code venv.

SGLang 0.5.15's DSA JIT kernel (jit_kernel/cutedsl_fp8_paged_mqa_logits.py) imports `cuda.bindings.driver` at
module level beside `cutlass` (../cutlass). No capture code calls it. Every submodule resolves, every name is an inert
class (the machinery of ../../torchvision).
"""

from pathlib import Path

exec(compile((Path(__file__).parents[2] / "torchvision" / "__init__.py").read_text(), __file__, "exec"))
