"""What one PDF may cost before and while it is parsed, each limit a setting with a named error.

A 13 KB file can declare a 5 m page (rendered for OCR: gigabytes of pixels), a 1 MB file can unpack to a
gigabyte, and one text line of ten million characters costs pdfium ~2 GB in its text page. These checks
run before the expensive step: streams are unpacked and counted (never kept) when the file is checked,
page sizes are read from the page tree, characters are counted before the lines are built.
"""

from __future__ import annotations

import ctypes
import logging
import math
import mmap
import re
import zlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from backend.errors import DocumentError
from backend.settings import IngestSettings

log = logging.getLogger(__name__)

MM_PER_POINT = 25.4 / 72
MIN_RENDER_DPI = 72  # below this OCR reads little; the page is refused instead
PDFIUM_STRING_LIMIT = 32767  # pdfium keeps at most this many characters of one string in a page's content
_IN_BLOCK = 1 << 16
_OUT_BLOCK = 1 << 20
_SHOWN = re.compile(rb"\((?:[^()\\]|\\.)*\)|<[0-9A-Fa-f\s]*>")  # string operands: what a content stream shows
_PASSED: set[tuple] = set()  # files whose streams passed, by path, size, time and limits
_NOT_CONTENT = (b"/XRef", b"/ObjStm", b"/EmbeddedFile", b"/Metadata", b"/Length1", b"/Length2", b"/Length3")


# ------------------------------------------------------------------------------- when checked


def check_streams(path: Path, name: str, limits: IngestSettings) -> None:
    """Unpack every Flate stream block by block, counting bytes (and characters shown, for content
    streams) without keeping them: a stream over ``max_stream_mb`` or showing more than
    ``max_page_chars`` is refused before pdfium decodes it into memory."""
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns, limits.max_stream_mb, limits.max_page_chars)
    if key in _PASSED:  # the file is checked before the upload starts and again when it is parsed
        return
    _check_streams(path, name, limits)
    if len(_PASSED) > 256:
        _PASSED.clear()
    _PASSED.add(key)


def _check_streams(path: Path, name: str, limits: IngestSettings) -> None:
    max_bytes = int(limits.max_stream_mb * 1024 * 1024)
    with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
        for keyword, start in _stream_starts(data):
            dictionary = data[max(0, keyword - 4096) : keyword]
            content = _is_content_stream(dictionary)
            if _zlib_header(data[start : start + 2]):
                unpacked, shown = _inflate(data, start, max_bytes, limits.max_page_chars if content else 0)
            elif content and b"/Filter" not in dictionary[dictionary.rfind(b"obj") :]:  # stored as it is
                unpacked, shown = 0, _shown_raw(data, start, limits.max_page_chars)
            else:
                continue
            if unpacked > max_bytes:
                raise DocumentError(
                    f"{name}: a compressed stream (at byte {start:,}) unpacks to more than "
                    f"{limits.max_stream_mb:g} MB: larger than ingest.max_stream_mb"
                )
            if content and shown > limits.max_page_chars:
                raise DocumentError(
                    f"{name}: one content stream shows more than {limits.max_page_chars:,} "
                    f"characters: more than ingest.max_page_chars allows on a page"
                )


def _stream_starts(data: mmap.mmap) -> Iterator[tuple[int, int]]:
    """(offset of each ``stream`` keyword, offset of its data); a plain find is ~10x faster than a regex."""
    position = data.find(b"stream")
    while position >= 0:
        after = position + 6
        if data[position - 3 : position] != b"end":
            eol = data[after : after + 2]
            if eol[:1] == b"\n" or eol == b"\r\n" or eol[:1] == b"\r":
                yield position, after + (2 if eol == b"\r\n" else 1)
        position = data.find(b"stream", after)


def _zlib_header(head: bytes) -> bool:
    return len(head) == 2 and head[0] & 0x0F == 8 and (head[0] << 8 | head[1]) % 31 == 0


def _is_content_stream(before: bytes) -> bool:
    """Page content or a form: not an image, font, ICC profile, cross-reference or metadata stream."""
    dictionary = before[before.rfind(b"obj") + 1 :]
    if b"/Subtype" in dictionary and b"/Form" not in dictionary:
        return False
    return not any(tag in dictionary for tag in _NOT_CONTENT)


def _inflate(data: mmap.mmap, start: int, max_bytes: int, max_shown: int) -> tuple[int, int]:
    """(bytes unpacked, string bytes shown), stopping as soon as a limit is passed or the stream ends."""
    inflater = zlib.decompressobj()
    position, unpacked, shown = start, 0, 0
    while not inflater.eof and unpacked <= max_bytes and (not max_shown or shown <= max_shown):
        piece = inflater.unconsumed_tail
        if not piece:
            if position >= len(data):
                break
            piece, position = data[position : position + _IN_BLOCK], position + _IN_BLOCK
        try:
            out = inflater.decompress(piece, _OUT_BLOCK)
        except zlib.error:  # not a stream after all, or damaged: pdfium decides what it can read
            break
        unpacked += len(out)
        if max_shown:
            shown += sum(map(len, _SHOWN.findall(out)))
    return unpacked, shown


def _shown_raw(data: mmap.mmap, start: int, max_shown: int) -> int:
    """String bytes of an uncompressed content stream, up to its ``endstream``, block by block."""
    end = data.find(b"endstream", start)
    end = len(data) if end < 0 else end
    shown = 0
    for block in range(start, end, _OUT_BLOCK):
        shown += sum(map(len, _SHOWN.findall(data[block : min(end, block + _OUT_BLOCK)])))
        if shown > max_shown:
            break
    return shown


def check_page_sizes(pdf: pdfium.PdfDocument, name: str, limits: IngestSettings) -> None:
    """Refuse a page longer than ``max_page_mm`` on either side (read from the page tree, not rendered)."""
    for index in range(len(pdf)):
        try:
            width, height = pdf.get_page_size(index)
        except pdfium.PdfiumError:
            continue  # a page that cannot be loaded is named when it is read
        longest = max(width, height) * MM_PER_POINT
        if longest > limits.max_page_mm:
            side = "wide" if width >= height else "high"
            raise DocumentError(
                f"{name}: page {index + 1} is {_length(longest)} {side}: larger than "
                f"ingest.max_page_mm ({limits.max_page_mm:g} mm)"
            )


def _length(mm: float) -> str:
    return f"{mm / 1000:.1f} m" if mm >= 1000 else f"{mm:.0f} mm"


# ----------------------------------------------------------------------------- while parsing


@dataclass
class PageLimits:
    """The per-page limits of one document, and what they found (pages pdfium cut or could not load)."""

    name: str
    limits: IngestSettings
    cut_pages: dict[int, int] = field(default_factory=dict)  # page index -> text objects cut by pdfium

    def check_text(self, textpage: pdfium.PdfTextPage, index: int) -> None:
        """Before the page's characters are read: refuse too many; note strings pdfium cut."""
        count = textpage.count_chars()
        if count > self.limits.max_page_chars:
            raise DocumentError(
                f"{self.name}: page {index + 1} has {count:,} characters: more than "
                f"ingest.max_page_chars ({self.limits.max_page_chars:,})"
            )
        if count >= PDFIUM_STRING_LIMIT:  # only then can a string have been cut
            cut = cut_text_objects(textpage)
            if cut:
                self.cut_pages[index] = cut

    def render_dpi(self, width: float, height: float, dpi: float, index: int) -> float:
        """``dpi``, lowered so that the page fits ``max_render_mpx``; refused below MIN_RENDER_DPI."""
        return render_dpi(width, height, dpi, self.limits, f"{self.name}: page {index + 1}")


def render_dpi(width: float, height: float, dpi: float, limits: IngestSettings, what: str) -> float:
    pixels = limits.max_render_mpx * 1e6
    fitting = 72.0 * math.sqrt(pixels / max(1.0, width * height))
    if fitting >= dpi:
        return dpi
    if fitting < MIN_RENDER_DPI:
        needed = width * height * (MIN_RENDER_DPI / 72.0) ** 2 / 1e6
        raise DocumentError(
            f"{what} needs {needed:.0f} megapixels at {MIN_RENDER_DPI} dpi: more than "
            f"ingest.max_render_mpx ({limits.max_render_mpx:g})"
        )
    log.info("%s rendered at %.0f dpi instead of %.0f (ingest.max_render_mpx)", what, fitting, dpi)
    return fitting


def cut_text_objects(textpage: pdfium.PdfTextPage) -> int:
    """Text objects holding PDFIUM_STRING_LIMIT characters or more: pdfium dropped the rest of their string.
    Counted in one walk over the page's characters: asking each object for its text walks them all once
    per object (10 s for a plot of 19,716 words)."""
    per_object: Counter[int] = Counter()
    handle = textpage.raw
    for index in range(textpage.count_chars()):
        obj = pdfium_c.FPDFText_GetTextObject(handle, index)
        address = ctypes.cast(obj, ctypes.c_void_p).value
        if address:
            per_object[address] += 1
    return sum(1 for n in per_object.values() if n >= PDFIUM_STRING_LIMIT)
