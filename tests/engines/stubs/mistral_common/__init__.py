"""A placeholder mistral_common for the capture probe in vLLM's CPU test venv (which does not install it).

vLLM's pixtral.py, imported by mistral3.py, imports mistral_common's request types at module level; no capture code
uses them. The same placeholder machinery as ../torchvision: every submodule resolves, every name is an inert class.
"""

from pathlib import Path

exec(compile((Path(__file__).parents[1] / "torchvision" / "__init__.py").read_text(), __file__, "exec"))
