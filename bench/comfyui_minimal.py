#!/usr/bin/env python3
"""Starts ComfyUI for image graphs where the packages it needs only for video files and its
web UI cannot be installed (a machine without a package index, for bench/engines.py --gpu):

    python3 bench/comfyui_minimal.py PATH/TO/main.py [ComfyUI's arguments]

`av` is replaced by a stand-in module whose every attribute is a placeholder (video nodes then
fail; image graphs do not touch it), and the web UI, workflow-template and docs packages by
empty packages of the same names. Nothing of ComfyUI is copied or changed."""

import importlib.abc
import importlib.machinery
import os
import runpy
import sys
import tempfile
import types


class _Meta(type):
    def __getattr__(cls, name):
        return _Any


class _Any(metaclass=_Meta):
    def __init__(self, *args, **kwargs):
        pass

    def __call__(self, *args, **kwargs):
        return _Any()

    def __getattr__(self, name):
        return _Any


class _StandIn(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path, target=None):
        if name == "av" or name.startswith("av."):
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):
        module = types.ModuleType(spec.name)
        module.__path__ = []
        module.__getattr__ = lambda attr: _Any
        return module

    def exec_module(self, module):
        pass


def empty_packages():
    root = tempfile.mkdtemp(prefix="comfyui-minimal-")
    for package, folder in [("comfyui_frontend_package", "static"), ("comfyui_workflow_templates", "templates"),
                            ("comfyui_embedded_docs", "docs")]:
        os.makedirs(os.path.join(root, package, folder))
        open(os.path.join(root, package, "__init__.py"), "w").close()
    with open(os.path.join(root, "comfyui_frontend_package", "static", "index.html"), "w") as f:
        f.write("<html></html>")
    return root


def main():
    try:
        import av  # noqa: F401
    except ImportError:
        sys.meta_path.insert(0, _StandIn())
    try:
        import comfyui_frontend_package  # noqa: F401
    except ImportError:
        sys.path.insert(0, empty_packages())
    script = os.path.abspath(sys.argv[1])
    sys.argv = [script] + sys.argv[2:]
    os.chdir(os.path.dirname(script))
    sys.path.insert(0, os.path.dirname(script))
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
