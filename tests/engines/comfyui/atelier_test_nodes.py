"""Atelier's test node pack for ComfyUI (loaded from custom_nodes/ by the engine tests).

AtelierSlowTint(image, steps, step_seconds, fail, oom_once, tint, seed): a weight-free node
that reports progress for `steps` steps of `step_seconds` each, checks for interrupts between
steps, then fails when `fail` is set, raises an out-of-memory error on its first run when
`oom_once` is set (the next run passes), and otherwise multiplies the image by `tint`.
Each run appends a line to runs.txt in the server's base directory (beside custom_nodes/)."""

import os
import time

import comfy.model_management
import comfy.utils
import torch

_oom_seen = set()


class AtelierSlowTint:
    @classmethod
    def INPUT_TYPES(cls):
        return {
            "required": {
                "image": ("IMAGE",),
                "steps": ("INT", {"default": 3, "min": 1, "max": 10000}),
                "step_seconds": ("FLOAT", {"default": 0.05, "min": 0.0, "max": 60.0, "step": 0.01}),
                "fail": ("BOOLEAN", {"default": False}),
                "oom_once": ("BOOLEAN", {"default": False}),
                "tint": (["none", "red", "green", "blue"], {"default": "none"}),
                "seed": ("INT", {"default": 0, "min": 0, "max": 0xFFFFFFFFFFFFFFFF}),
            }
        }

    RETURN_TYPES = ("IMAGE",)
    FUNCTION = "run"
    CATEGORY = "atelier/test"

    def run(self, image, steps, step_seconds, fail, oom_once, tint, seed):
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "runs.txt"), "a") as f:
            f.write(f"{seed}\n")
        bar = comfy.utils.ProgressBar(steps)
        for i in range(steps):
            comfy.model_management.throw_exception_if_processing_interrupted()
            time.sleep(step_seconds)
            bar.update_absolute(i + 1, steps)
        if fail:
            raise RuntimeError("atelier test failure requested")
        if oom_once and seed not in _oom_seen:
            _oom_seen.add(seed)
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB (simulated)")
        factors = {"none": (1, 1, 1), "red": (1, 0.2, 0.2), "green": (0.2, 1, 0.2), "blue": (0.2, 0.2, 1)}[tint]
        return (image * torch.tensor(factors, dtype=image.dtype),)


NODE_CLASS_MAPPINGS = {"AtelierSlowTint": AtelierSlowTint}
NODE_DISPLAY_NAME_MAPPINGS = {"AtelierSlowTint": "Atelier slow tint (test)"}
