"""A placeholder `tilelang` (the TileLang GPU kernel compiler) for the SGLang model-code venv.

SGLang 0.5.13's DeepSeek-V4 model file imports its hyper-connection kernels (layers/mhc.py), which import `tilelang`
at module level and decorate kernel factories with `@tilelang.jit(...)`; 0.5.14 stopped importing them with the
model. No capture code compiles or calls a kernel: building the model class and asking it for its EAGLE-3 layers
is what the probe does. The machinery of ../../torchvision (every submodule resolves, every name is an inert
class), with one change: an instance is callable, and called on one function it returns that function, so
`@tilelang.jit` and `@tilelang.jit(pass_configs=...)` leave the decorated factory as it was.
"""

from pathlib import Path

exec(compile((Path(__file__).parents[2] / "torchvision" / "__init__.py").read_text(), __file__, "exec"))


def _call(self, *args, **kwargs):
    return args[0] if len(args) == 1 and not kwargs and callable(args[0]) else self


def _placeholder(name: str) -> type:  # the machinery's names find this one at call time
    return _Meta(name, (), {"__init__": lambda self, *a, **k: None, "__call__": _call})  # noqa: F821


class _CallableModule(types.ModuleType):  # noqa: F821
    __call__ = _call


def _create_module(self, spec):
    module = _CallableModule(spec.name)
    module.__path__ = []
    module.__getattr__ = _module_getattr  # noqa: F821
    return module


_Finder.create_module = _create_module  # noqa: F821
