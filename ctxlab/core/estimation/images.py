"""Image tokens by size, not by base64 length (spec R16).

A PNG/JPEG/GIF/WebP header gives the image's size; OpenAI's vision pricing rule gives the tokens:
the image is scaled to fit 2048×2048, then its short side to 768 px, and costs 85 + 170 tokens
per 512-px tile.  An image whose size cannot be read costs a flat :data:`UNKNOWN_IMAGE_TOKENS`.
This applies to image *blocks* only: a data URL inside a text (a screenshot tool returning
``data:image/png;base64,...`` as a string) is text to a provider, and counts as text (issue 30).
"""

from __future__ import annotations

import base64
import binascii
import re
import struct

__all__ = ["UNKNOWN_IMAGE_TOKENS", "estimate_image_tokens"]

#: tokens for an image whose size cannot be read
UNKNOWN_IMAGE_TOKENS = 1000


def _image_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) in pixels from the first bytes of a PNG, GIF, JPEG or WebP, else ``None``."""
    if data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) >= 24:
        w, h = struct.unpack(">II", data[16:24])
        return w, h
    if data[:6] in (b"GIF87a", b"GIF89a") and len(data) >= 10:
        w, h = struct.unpack("<HH", data[6:10])
        return w, h
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP" and len(data) >= 30:
        if data[12:16] == b"VP8X":
            w = 1 + int.from_bytes(data[24:27], "little")
            h = 1 + int.from_bytes(data[27:30], "little")
            return w, h
        return None
    if data[:2] == b"\xff\xd8":
        i = 2
        while i + 9 < len(data):
            if data[i] != 0xFF:
                i += 1
                continue
            marker = data[i + 1]
            if marker in (0xC0, 0xC1, 0xC2):
                h, w = struct.unpack(">HH", data[i + 5 : i + 9])
                return w, h
            seg = struct.unpack(">H", data[i + 2 : i + 4])[0]
            i += 2 + seg
    return None


def estimate_image_tokens(url_or_b64: str) -> int:
    """Tokens of one image from a data URL or raw base64 (OpenAI tile rule), else a flat 1,000.

    The image is scaled to fit 2048x2048, then its short side to 768 px; it costs
    85 + 170 tokens per 512-px tile.  Only the first ~64 KiB of base64 are decoded.  Never raises.
    """
    b64 = url_or_b64.split(",", 1)[1] if url_or_b64.startswith("data:") else url_or_b64
    head = re.sub(r"\s", "", b64[:88000])
    head = head[: len(head) - len(head) % 4]
    try:
        data = base64.b64decode(head, validate=False)
    except (binascii.Error, ValueError):
        return UNKNOWN_IMAGE_TOKENS
    size = _image_size(data)
    if size is None or min(size) <= 0:
        return UNKNOWN_IMAGE_TOKENS
    scale = min(1.0, 2048 / max(size))
    w, h = size[0] * scale, size[1] * scale
    scale = min(1.0, 768 / min(w, h))
    w, h = w * scale, h * scale
    tiles = -(-int(w) // 512) * -(-int(h) // 512)
    return 85 + 170 * tiles
