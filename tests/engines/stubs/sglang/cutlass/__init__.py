"""A placeholder `cutlass` (NVIDIA's CUTLASS Python DSL, a GPU-only package) for the SGLang model-code venv.

SGLang 0.5.15's DeepSeek model file imports its DSA indexer, whose JIT kernel module imports `cutlass` and
`cutlass.cute` at module level for a CUDA kernel (jit_kernel/dsa/cutedsl_paged_mqa_logits.py). No capture code
calls it. Only on SGLang's path (capture_probe.setup), so vLLM never sees a `cutlass` it would take for real. The
same placeholder machinery as ../../torchvision: every submodule resolves, every name is an inert class.
"""

from pathlib import Path

exec(compile((Path(__file__).parents[2] / "torchvision" / "__init__.py").read_text(), __file__, "exec"))
