"""A try-on stand-in: pastes the garment, scaled, onto the person's torso. Logs
tqdm-style progress, honours cancel between steps, and counts its predictions in
$ATELIER_TEST_COUNT_FILE (one line each) so that tests can tell how often it ran.
$ATELIER_TEST_SETUP_SECONDS makes setup take that long, as loading weights does."""

import os
import sys
import time

from PIL import Image

from cog import BaseRunner, Input, Path


class Runner(BaseRunner):
    def setup(self) -> None:
        time.sleep(float(os.environ.get("ATELIER_TEST_SETUP_SECONDS", "0")))

    def run(
        self,
        human_img: Path = Input(description="person"),
        garm_img: Path = Input(description="garment"),
        category: str = Input(default="upper_body", choices=["upper_body", "lower_body", "dresses"]),
        garment_des: str = Input(default=""),
        steps: int = Input(default=4, ge=1, le=200),
        step_seconds: float = Input(default=0.05, ge=0.0, le=10.0),
        seed: int = Input(default=0),
    ) -> Path:
        count = os.environ.get("ATELIER_TEST_COUNT_FILE")
        if count:
            with open(count, "a") as f:
                f.write(f"{seed}\n")
        person = Image.open(human_img).convert("RGB")
        garment = Image.open(garm_img).convert("RGB")
        for i in range(steps):
            time.sleep(step_seconds)
            # diffusers' tqdm line, as a real try-on model prints it
            done = i + 1
            print(f"{int(100 * done / steps):3d}%|{'#' * (done * 10 // steps):<10}| {done}/{steps}", flush=True)
        w, h = person.size
        top = {"upper_body": 0.2, "lower_body": 0.5, "dresses": 0.25}[category]
        box = (w // 4, int(h * top), w * 3 // 4, int(h * (top + 0.35)))
        person.paste(garment.resize((box[2] - box[0], box[3] - box[1])), box[:2])
        out = "/tmp/tryon_echo_out.png" if not os.environ.get("TMPDIR") else os.path.join(os.environ["TMPDIR"], "tryon_echo_out.png")
        person.save(out)
        return Path(out)
