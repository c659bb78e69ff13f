"""Writes an ESRGAN x4 network with random weights (the real architecture, 1 block of 8
filters, ~0.2 MB) as safetensors, for the upscale test template: python make_esrgan.py OUT"""

import sys

import torch
from safetensors.torch import save_file
from spandrel.architectures.ESRGAN.__arch.RRDB import RRDBNet

torch.manual_seed(7)
net = RRDBNet(in_nc=3, out_nc=3, num_filters=8, num_blocks=1, scale=4)
save_file({k: v.contiguous() for k, v in net.state_dict().items()}, sys.argv[1])
