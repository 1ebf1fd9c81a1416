"""A folder of images for a time-to-accuracy run: one sub-folder per class (ImageFolder's
layout), split into training and held-out images, decoded once into memory.

The split is by a checksum of each file's path, so it is the same on every run, every rank and
in both frameworks, and adding images does not move the others between the two sets. Decoding
happens before the clock starts: the run measures training, not JPEG decoding.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dltui.formatting import exact_bytes, fmt_memory

SUFFIXES = {".png", ".jpg", ".jpeg", ".bmp", ".gif", ".ppm", ".tif", ".tiff", ".webp"}
MAX_BYTES = 8 << 30
"""The decoded set must fit in memory; past this the run refuses, with the figure."""


@dataclass(frozen=True, slots=True)
class ImageSet:
    classes: list[str]
    train_images: Any
    """uint8, N × size × size × 3."""
    train_labels: Any
    holdout_images: Any
    holdout_labels: Any


def held_out(relative: str, fraction: float) -> bool:
    return zlib.crc32(relative.encode()) % 10_000 < fraction * 10_000


def load(folder: str, size: int, holdout: float) -> ImageSet:
    """Read and split the folder; ValueError says what is wrong with it."""
    import numpy as np

    try:
        from PIL import Image
    except ImportError as exc:
        raise ValueError("reading a folder of images needs Pillow (pip install pillow)") from exc
    root = Path(folder)
    if not root.is_dir():
        raise ValueError(f"{folder} is not a folder on this server")
    classes = sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    if len(classes) < 2:
        raise ValueError(f"{folder} needs a sub-folder per class, at least two; found {classes}")
    files = [
        (path, label)
        for label, name in enumerate(classes)
        for path in sorted((root / name).iterdir())
        if path.suffix.lower() in SUFFIXES
    ]
    needed = len(files) * size * size * 3
    if needed > MAX_BYTES:
        raise ValueError(
            f"{len(files)} images of {size}×{size} take {fmt_memory(needed)} decoded, over "
            f"the {exact_bytes(MAX_BYTES)} this mode holds in memory: use a smaller image size"
        )
    sets: dict[bool, tuple[list[Any], list[int]]] = {False: ([], []), True: ([], [])}
    for path, label in files:
        with Image.open(path) as image:
            resized = image.convert("RGB").resize((size, size), Image.Resampling.BILINEAR)
            pixels = np.asarray(resized)
        images, labels = sets[held_out(str(path.relative_to(root)), holdout)]
        images.append(pixels)
        labels.append(label)
    (train, train_labels), (kept, kept_labels) = sets[False], sets[True]
    if not train or not kept:
        raise ValueError(f"{folder}: too few images to hold {holdout:.0%} out for testing")
    return ImageSet(
        classes,
        np.stack(train),
        np.asarray(train_labels, dtype=np.int64),
        np.stack(kept),
        np.asarray(kept_labels, dtype=np.int64),
    )
