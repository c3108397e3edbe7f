"""A placeholder `datasets` for the SGLang model-code venv (which does not install it).

SGLang 0.5.4-0.5.5's model config asks `is_in_ci()` when a draft's context is shorter than the target's; that
helper's module imports sglang/bench_serving.py, which imports `datasets` at module level for benchmark data. No
config code uses it. The same placeholder machinery as ../torchvision: every submodule resolves, every name is an
inert class.
"""

from pathlib import Path

exec(compile((Path(__file__).parents[1] / "torchvision" / "__init__.py").read_text(), __file__, "exec"))
