"""Image folders: class sub-folders (label = sorted folder index) or a flat folder, decoded with Pillow.

With an input contract (``LoadOptions.images``, see ``calibration.contract``) an image is decoded to the
contract's channel order, resized to its H×W with its method and normalized ``(pixel - mean) / std`` into the
model's layout; without one it is converted to grey / RGB / RGBA by the spec's channel count, resized bilinear
and kept as 0..255 values.
"""

from __future__ import annotations

import io
import os
import re
import stat
import struct
import warnings
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from ..contract import ImageContract, for_input
from ..errors import CalibrationError
from ..safe_walk import list_dir, walk_files
from ..spec import TensorSpec, show_shape
from ..types import LoadOptions
from .base import Reader, index_chunks, reason

# What Pillow raises on a damaged or hostile file while it opens or decodes it (UnidentifiedImageError and
# "image file is truncated" are OSErrors; some plugins let struct / zlib / EOF / SyntaxError escape).
DECODE_ERRORS = (OSError, ValueError, SyntaxError, EOFError, struct.error, zlib.error)

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".gif")
MAX_PIXELS = 100_000_000  # 10000 x 10000: larger images are refused (checked from the header, before decoding)
_MODES = {1: "L", 3: "RGB", 4: "RGBA"}
_MAGIC = (b"\x89PNG", b"\xff\xd8\xff", b"GIF8", b"BM")
_RESAMPLE = {"bilinear": "BILINEAR", "nearest": "NEAREST", "area": "BOX"}


def looks_like_image(data: bytes) -> bool:
    """True when the bytes start like a PNG, JPEG, GIF or BMP file."""
    return data.startswith(_MAGIC)


def image_layout(
    spec: TensorSpec, contract: ImageContract | None = None
) -> tuple[tuple[int | None, int | None], int | None, str | None]:
    """(H, W), channels (None = no channel dim) and a problem, for an NHWC / NHW image input (or the layout its
    contract names, NCHW included)."""
    if contract is not None:
        return (contract.height, contract.width), (None if contract.layout == "NHW" else contract.channels), None
    dims = spec.sample_shape
    if len(dims) == 2:
        return (dims[0], dims[1]), None, None
    if len(dims) == 3 and dims[2] in _MODES:
        return (dims[0], dims[1]), dims[2], None
    return (
        (None, None),
        None,
        (
            f"input {spec.name!r}: images need an input of shape (any, H, W) or "
            f"(any, H, W, C) with C in 1/3/4, the model has {show_shape(spec.shape)}"
        ),
    )


def decode_image(
    data: bytes | Path, spec: TensorSpec, origin: str, contract: ImageContract | None = None
) -> np.ndarray:
    """Decode one image as uint8 0..255 (H, W[, C]): in the contract's channel order and resized to its H×W with
    its method, else to the spec's layout (bilinear).

    ``origin`` names the image in errors (a file, or a record of a TFRecord). Images over MAX_PIXELS are refused
    from their header, before any pixel is decoded; anything Pillow cannot decode raises CalibrationError.
    """
    from PIL import Image

    (h, w), channels, _ = image_layout(spec, contract)
    resample = getattr(Image, _RESAMPLE[contract.resize] if contract is not None else "BILINEAR")
    src = io.BytesIO(data) if isinstance(data, bytes) else data
    try:
        with warnings.catch_warnings():
            # our own limit (below) replaces Pillow's DecompressionBombWarning, which would print to the terminal
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(src) as img:
                if img.width * img.height > MAX_PIXELS:
                    raise _too_large(origin, f"{img.width}x{img.height} = {img.width * img.height:,} pixels")
                img = img.convert(_MODES.get(channels or 1))
                if h is not None and w is not None and img.size != (w, h):
                    img = img.resize((w, h), resample)
                arr = np.asarray(img, dtype=np.uint8)
    except Image.DecompressionBombError as exc:  # over twice Pillow's own limit: refused inside Image.open
        pixels = re.search(r"\((\d+) pixels\)", str(exc))
        raise _too_large(origin, f"{int(pixels[1]):,} pixels" if pixels else "over Pillow's limit") from None
    except DECODE_ERRORS as exc:
        raise CalibrationError(f"cannot decode image {origin}: {reason(exc)}") from None
    if channels == 1:
        arr = arr[..., np.newaxis]
    if contract is not None and contract.channel_order == "BGR":
        arr = arr[..., ::-1]
    return arr


def to_model_input(images: list[np.ndarray], contract: ImageContract | None) -> np.ndarray:
    """Decoded images (same size) as one batch of model input: the contract applied, else 0..255 as decoded."""
    batch = np.stack(images)
    return batch if contract is None else contract.apply(batch)


def _too_large(origin: str, size: str) -> CalibrationError:
    return CalibrationError(
        f"image {origin} is too large: {size}, over the limit of {MAX_PIXELS:,} pixels "
        "(10000x10000); downscale it first"
    )


def _images_in(folder: Path, root: Path, recursive: bool) -> list[Path]:
    """Image files in ``folder`` (and below it with ``recursive``), dot-names skipped, links kept inside ``root``."""
    found = walk_files(folder, root) if recursive else [p for p in list_dir(folder, root) if p.is_file()]
    return sorted(p for p in found if p.suffix.lower() in IMAGE_SUFFIXES)


_GONE = os.stat_result((0, 0, 0, 0, 0, 0, -1, 0, 0, 0))  # vanished or unreadable: the decoder says why


def _stat(path: Path) -> os.stat_result | None:
    try:
        return path.stat()
    except OSError:
        return None


def split_parent(root: Path, per_class: list[tuple[str, list[Path]]]) -> str | None:
    """The problem when ``root`` is the parent of splits (train/val/test, each holding class folders): every
    "class" folder holds no image of its own, only sub-folders with images, and they share sub-folder names."""
    if len(per_class) < 1:
        return None
    inner: list[set[str]] = []
    for name, files in per_class:
        depths = {len(f.relative_to(root / name).parts) for f in files}
        if 1 in depths:
            return None
        inner.append({f.relative_to(root / name).parts[0] for f in files})
    shared = set.intersection(*inner)
    if len(shared) < 2:
        return None
    splits = ", ".join(name for name, _ in per_class)
    classes = ", ".join(sorted(shared)[:6]) + (", ..." if len(shared) > 6 else "")
    return (
        f"{root} holds no images in its sub-folders ({splits}), only in their sub-folders ({classes}): it looks "
        f"like the parent of data splits, which would be read as {len(per_class)} classes named {splits}; "
        f"pass one split, e.g. {root / per_class[0][0]}"
    )


class ImageFolderReader(Reader):
    """A folder of images: ``root/<class>/*.png`` (labelled) or ``root/*.png`` (unlabelled)."""

    format = "image-folder"

    def __init__(self, path: Path, specs: Sequence[TensorSpec], options: LoadOptions) -> None:
        super().__init__(path, specs, options)
        self.files: list[Path] = []
        self.label_idx: np.ndarray | None = None
        self._stats: dict[Path, os.stat_result | None] = {}
        self.contract = for_input(options.images, self.specs[0].name) if len(self.specs) == 1 else None
        if len(self.specs) > 1:
            self.problems.append(
                f"an image folder feeds one input but the model has {len(self.specs)} inputs "
                f"({', '.join(s.name for s in self.specs)}); use an .npz with one array per input"
            )
            return
        _, _, problem = image_layout(self.specs[0], self.contract)
        if problem:
            self.problems.append(problem)
            return
        entries = list_dir(path)  # every link checked before any folder is walked; one stat per entry
        self._stats = {e: _stat(e) for e in entries}
        classes = [d for d in entries if self._stats[d] is not None and stat.S_ISDIR(self._stats[d].st_mode)]
        per_class = [(d.name, _images_in(d, path, recursive=True)) for d in classes]
        empty = [name for name, files in per_class if not files]
        per_class = per_class if len(empty) < len(per_class) else []
        top = [
            p
            for p in entries
            if self._stats[p] is not None
            and stat.S_ISREG(self._stats[p].st_mode)
            and p.suffix.lower() in IMAGE_SUFFIXES
        ]
        nested = split_parent(path, [(name, files) for name, files in per_class if files])
        if nested:
            self.problems.append(nested)
            return
        if per_class:
            self.class_names = tuple(name for name, _ in per_class)
            self.files = [f for _, files in per_class for f in files]
            self.label_idx = np.concatenate([np.full(len(f), i, dtype=np.int64) for i, (_, f) in enumerate(per_class)])
            if empty:  # kept as classes, as image_dataset_from_directory does: the other classes keep their index
                self.warnings.append(f"class folder(s) {', '.join(empty)} of {path.name}/ hold no images")
            if top:
                self.warnings.append(
                    f"{len(top)} images at the top of {path.name}/ ignored: with class sub-folders "
                    "only images inside them are used"
                )
        else:
            self.files = top
        self._refuse_empty(path)

    def _refuse_empty(self, path: Path) -> None:
        """An empty (0-byte) file is no image: refused when the folder is listed, before anything is decoded (a
        folder of 100,000 empty .png files took minutes to fail one batch at a time)."""
        empty = [f for f in self.files if (self._stats.get(f) or _stat(f) or _GONE).st_size == 0]
        if empty:
            self.problems.append(
                f"{len(empty):,} of the {len(self.files):,} image files in {path} are empty (0 bytes), e.g. "
                f"{empty[0]}: not images. Remove them, or point at a folder of images"
            )
            self.files, self.label_idx = [], None  # nothing is decoded

    def count(self) -> int:
        """Number of image files found."""
        return len(self.files)

    def labels(self) -> np.ndarray | None:
        """Class index of every file (sorted sub-folder order), or None for a flat folder."""
        return self.label_idx

    def batches(self, indices, batch_size) -> Iterator[dict[str, np.ndarray]]:
        """Decode the selected files; an unreadable file or differing sizes stop with a CalibrationError."""
        spec = self.specs[0]
        for chunk in index_chunks(indices, len(self.files), batch_size):
            arrays, bad = [], []
            for i in chunk.tolist():
                try:
                    arrays.append(decode_image(self.files[i], spec, str(self.files[i]), self.contract))
                except CalibrationError as exc:
                    bad.append(str(exc))
            if bad:
                raise CalibrationError(f"{len(bad)} unusable image(s) in {self.path}: " + "; ".join(bad[:5]))
            shapes = sorted({a.shape for a in arrays})
            if len(shapes) > 1:
                raise CalibrationError(
                    f"images in {self.path} differ in size ({', '.join(map(str, shapes[:4]))}) "
                    f"and input {spec.name!r} has no fixed H/W to resize to"
                )
            yield {spec.name: to_model_input(arrays, self.contract)}
