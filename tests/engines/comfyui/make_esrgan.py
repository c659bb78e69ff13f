"""Writes an ESRGAN x4 network with random weights (the real RRDBNet architecture) as
safetensors, for the upscale test template and the benchmark:

    python make_esrgan.py OUT [--filters 8 --blocks 1]

The defaults make a tiny one (~0.2 MB) for tests; `--filters 64 --blocks 23` is the size of
Real-ESRGAN x4plus (~67 MB), for timing the real architecture without its weights."""

import argparse

import torch
from safetensors.torch import save_file
from spandrel.architectures.ESRGAN.__arch.RRDB import RRDBNet

parser = argparse.ArgumentParser()
parser.add_argument("out")
parser.add_argument("--filters", type=int, default=8)
parser.add_argument("--blocks", type=int, default=1)
args = parser.parse_args()
torch.manual_seed(7)
net = RRDBNet(in_nc=3, out_nc=3, num_filters=args.filters, num_blocks=args.blocks, scale=4)
save_file({k: v.contiguous() for k, v in net.state_dict().items()}, args.out)
