"""A placeholder torchvision for the engines' CPU test venvs: the CUDA-linked wheel does not import beside CPU torch.

SGLang's argument code (and transformers under it) import torchvision only for multimodal constants and image
helpers. Every `torchvision.*` submodule resolves to a module whose public names are placeholder classes, and a
placeholder's attributes are placeholders too. Nothing in argument resolution calls them."""

import importlib.abc
import importlib.machinery
import sys
import types

__version__ = "0.0.0+placeholder"


class _Meta(type):
    def __getattr__(cls, name: str) -> object:
        if name.startswith("__"):
            raise AttributeError(name)
        return _placeholder(name)


def _placeholder(name: str) -> type:
    return _Meta(name, (), {"__init__": lambda self, *a, **k: None})


def _module_getattr(name: str) -> object:
    if name.startswith("__"):
        raise AttributeError(name)
    return _placeholder(name)


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path, target=None):
        if fullname.startswith(__name__ + "."):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        module = types.ModuleType(spec.name)
        module.__path__ = []
        module.__getattr__ = _module_getattr
        return module

    def exec_module(self, module):
        pass


__getattr__ = _module_getattr
sys.meta_path.append(_Finder())
