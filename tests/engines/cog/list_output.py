"""Returns a list of images (OOTDiffusion-style samples), one per `samples`."""

import os

from PIL import Image

from cog import BaseRunner, Input, Path


class Runner(BaseRunner):
    def run(self, image: Path = Input(), samples: int = Input(default=2, ge=1, le=8)) -> list[Path]:
        src = Image.open(image).convert("RGB")
        out = []
        for i in range(samples):
            p = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"list_output_{i}.png")
            src.rotate(90 * i).save(p)
            out.append(Path(p))
        return out
