"""PWA icons drawn with Pillow: an 8x8 'pixel digit' on the theme colour, plain and maskable."""

from __future__ import annotations

from pathlib import Path

THEME = "#0f172a"
ACCENT = (56, 189, 248)

# Intensities 0..4 of a handwritten-looking "4", in the spirit of the 8x8 digits the demo model reads.
GLYPH = ("00000000", "00020300", "00240400", "02400400", "24444440", "00000400", "00000400", "00000300")

ICONS = (  # file name, pixel size, manifest purpose
    ("icon-192.png", 192, "any"),
    ("icon-512.png", 512, "any"),
    ("icon-maskable-512.png", 512, "maskable"),
)


def _hex(color: str) -> tuple[int, int, int]:
    return tuple(int(color[i : i + 2], 16) for i in (1, 3, 5))


def make_icon(size: int, maskable: bool = False, background: str = THEME):
    """RGBA icon of ``size`` px: rounded tile for 'any'; full-bleed with the glyph in the safe zone for maskable."""
    from PIL import Image, ImageDraw

    bg = _hex(background)
    img = Image.new("RGBA", (size, size), (*bg, 255) if maskable else (0, 0, 0, 0))
    draw = ImageDraw.Draw(img)
    if not maskable:
        draw.rounded_rectangle((0, 0, size - 1, size - 1), radius=size // 6, fill=(*bg, 255))
    # maskable icons keep their content inside the central 80% circle; the plain one may use ~75% of the tile
    glyph_side = size * (0.50 if maskable else 0.72)
    cell = glyph_side / 8
    origin = (size - glyph_side) / 2
    gap = max(1.0, cell * 0.08)
    for r, row in enumerate(GLYPH):
        for c, ch in enumerate(row):
            level = int(ch) / 4
            color = tuple(round(b + (a - b) * (0.18 + 0.82 * level)) for a, b in zip(ACCENT, bg))
            x0, y0 = origin + c * cell, origin + r * cell
            draw.rectangle((x0 + gap, y0 + gap, x0 + cell - gap, y0 + cell - gap), fill=(*color, 255))
    return img


def write_icons(directory: Path, background: str = THEME) -> list[dict]:
    """Write every icon into ``directory``; return their web-manifest entries (src relative to the site root)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    entries = []
    for name, size, purpose in ICONS:
        make_icon(size, maskable=purpose == "maskable", background=background).save(directory / name, format="PNG")
        entries.append(
            {"src": f"{directory.name}/{name}", "sizes": f"{size}x{size}", "type": "image/png", "purpose": purpose}
        )
    return entries
