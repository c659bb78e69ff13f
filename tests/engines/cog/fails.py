"""Always fails at run time, after logging a line."""

from cog import BaseRunner, Input, Path


class Runner(BaseRunner):
    def run(self, human_img: Path = Input(), garm_img: Path = Input()) -> Path:
        print("loading weights", flush=True)
        raise RuntimeError("simulated failure of the test predictor")
