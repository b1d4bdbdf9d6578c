"""Measure the CPU time one image sample costs a DataLoader worker (the basis of
``synthetic.DEFAULT_SAMPLE_COST_MS``, the profile's ``loader.sample_cost_ms`` default).

The sample is ImageNet-sized: a 500 x 375 RGB JPEG (ImageNet's most common size), quality 90,
of colour gradients under noise so that it compresses like a photograph (its size is printed:
ImageNet's training JPEGs average about 110 KB). Each sample is decoded with Pillow and
augmented as torchvision's ImageNet recipe does, in plain Pillow and torch so torchvision need
not be installed: RandomResizedCrop (scale 0.08-1, ratio 3/4-4/3, bilinear) to 224 x 224, a
random horizontal flip, to a float tensor in [0, 1], normalised by ImageNet's mean and std.
torch runs on one thread, as in a DataLoader worker. The figure is CPU time
(``time.process_time``), so other load on the machine does not inflate it.

Run: ``.venv/bin/python benchmarks/bench_sample_cost.py [samples]``
"""

from __future__ import annotations

import io
import math
import random
import statistics
import sys
import time


def make_jpeg(width: int = 500, height: int = 375, quality: int = 90) -> bytes:
    """A photograph-like JPEG: colour gradients under per-channel noise (about 110 KB at 500 x 375)."""
    from PIL import Image

    g = Image.linear_gradient("L").resize((width, height))
    gradient = Image.merge("RGB", [g, g.transpose(Image.Transpose.FLIP_TOP_BOTTOM),
                                   g.transpose(Image.Transpose.FLIP_LEFT_RIGHT)])
    noise = Image.merge("RGB", [Image.effect_noise((width, height), 60) for _ in range(3)])
    img = Image.blend(gradient, noise, 0.5)
    out = io.BytesIO()
    img.save(out, "JPEG", quality=quality)
    return out.getvalue()


def sample(data: bytes, rng: random.Random, torch, mean, std):
    from PIL import Image

    img = Image.open(io.BytesIO(data)).convert("RGB")  # decode
    w, h = img.size
    area = w * h
    for _ in range(10):  # torchvision's RandomResizedCrop.get_params
        target = area * rng.uniform(0.08, 1.0)
        ratio = math.exp(rng.uniform(math.log(3 / 4), math.log(4 / 3)))
        cw, ch = int(round(math.sqrt(target * ratio))), int(round(math.sqrt(target / ratio)))
        if 0 < cw <= w and 0 < ch <= h:
            x, y = rng.randint(0, w - cw), rng.randint(0, h - ch)
            break
    else:
        cw, ch, x, y = w, h, 0, 0
    img = img.resize((224, 224), Image.Resampling.BILINEAR, box=(x, y, x + cw, y + ch))
    if rng.random() < 0.5:
        img = img.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
    t = torch.frombuffer(bytearray(img.tobytes()), dtype=torch.uint8).view(224, 224, 3)
    t = t.permute(2, 0, 1).float().div_(255)
    return t.sub_(mean).div_(std)


def main(n: int = 300) -> None:
    import PIL
    import torch

    torch.set_num_threads(1)
    data = make_jpeg()
    mean = torch.tensor([0.485, 0.456, 0.406]).view(3, 1, 1)
    std = torch.tensor([0.229, 0.224, 0.225]).view(3, 1, 1)
    rng = random.Random(1)
    for _ in range(20):  # warm-up: imports, allocator
        sample(data, rng, torch, mean, std)
    costs = []
    for _ in range(n):
        t0 = time.process_time()
        sample(data, rng, torch, mean, std)
        costs.append((time.process_time() - t0) * 1000)
    costs.sort()
    print(f"Pillow {PIL.__version__}, torch {torch.__version__}, Python {sys.version.split()[0]}")
    print(f"JPEG 500x375 q90: {len(data) / 1000:.0f} KB")
    print(f"decode + RandomResizedCrop(224) + flip + to float + normalise, {n} samples, CPU ms per sample:")
    print(f"  median {statistics.median(costs):.2f}  p10 {costs[n // 10]:.2f}  p90 {costs[n * 9 // 10]:.2f}  "
          f"mean {statistics.fmean(costs):.2f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 300)
