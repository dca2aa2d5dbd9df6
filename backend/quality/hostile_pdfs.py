"""Small hostile PDFs written by hand: each stands for a file that once cost gigabytes or lost text.

Sizes are parameters so the tests use small versions under lowered limits and the memory benchmark
(``python -m backend.quality.bench_hostile``) uses the full-size ones.
"""

from __future__ import annotations

import os
import zlib
from pathlib import Path
from typing import Optional, Sequence


def write_objects(
    path: Path, objects: list[bytes], trailer: bytes = b"", tail: bytes = b"", version: bytes = b"1.7"
) -> Path:
    """A PDF of the given object bodies (object 1 is the catalog) with a correct cross-reference table;
    ``trailer`` adds entries to the trailer, ``tail`` comes after ``%%EOF``."""
    out = bytearray(b"%PDF-" + version + b"\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R %s >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, trailer, xref)
    path.write_bytes(bytes(out) + tail)
    return path


FONT = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"
WORDS = b"basalt granite quartz feldspar mica olivine pyroxene "


def text_stream(lines: Sequence[bytes], size: int = 12, top: float = 760) -> bytes:
    """A content stream writing each line with the Helvetica font, one below the other."""
    out = [b"BT /F1 %d Tf 72 %g Td %d TL" % (size, top, size + 2)]
    out += [b"(" + line + b") '" for line in lines]
    out.append(b"ET")
    return b"\n".join(out)


def write_pdf(
    path: Path, pages: Sequence[tuple[tuple[float, float], Sequence[bytes]]], tail: bytes = b"", compress: bool = True
) -> Path:
    """A PDF with one page per ``((width, height), [content streams])``, Flate-compressed unless not
    ``compress``; ``tail`` is appended after ``%%EOF``."""
    objects: list[bytes] = [b"", b"", FONT]  # 1 catalog, 2 pages root, 3 font
    page_refs = []
    for (width, height), streams in pages:
        content_refs = []
        for data in streams:
            packed = zlib.compress(data, 9) if compress else data
            objects.append(
                b"<< /Length %d %s>>\nstream\n" % (len(packed), b"/Filter /FlateDecode " * compress)
                + packed
                + b"\nendstream"
            )
            content_refs.append(b"%d 0 R" % len(objects))
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %g %g] /Resources << /Font << /F1 3 0 R >> >>"
            b" /Contents [%s] >>" % (width, height, b" ".join(content_refs))
        )
        page_refs.append(b"%d 0 R" % len(objects))
    count = len(page_refs)
    objects[0] = b"<< /Type /Catalog /Pages 2 0 R >>"
    objects[1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(page_refs), count)
    return _write(path, objects, tail)


def _write(path: Path, objects: Sequence[bytes], tail: bytes) -> Path:
    return write_objects(path, list(objects), tail=tail)


def normal_lines(count: int = 30) -> list[bytes]:
    return [b"Line %d: " % i + WORDS for i in range(count)]


# ------------------------------------------------------------------------------------ the files


def huge_page(path: Path, points: float = 14400) -> Path:
    """A tiny file whose one page is ``points`` wide and high (14400 pt = 5.08 m)."""
    return write_pdf(path, [((points, points), [text_stream(normal_lines(), top=points - 72)])])


def long_line(path: Path, chars: int = 10_000_000, streams: int = 1, compress: bool = True) -> Path:
    """One page holding one text line of ``chars`` characters (in strings of 30,000: under pdfium's cut),
    written in ``streams`` content streams (each showing less when there are more)."""
    piece = (WORDS * (30_000 // len(WORDS) + 1))[:30_000]
    shows = max(1, chars // len(piece))
    parts = [
        b"BT /F1 1 Tf 10 %d Td\n" % (400 - n) + b"\n".join([b"(" + piece + b") Tj"] * (shows // streams)) + b"\nET"
        for n in range(streams)
    ]
    return write_pdf(path, [((612, 792), [text_stream(normal_lines(5)), *parts])], compress=compress)


def compression_bomb(path: Path, inflated_mb: int = 1024) -> Path:
    """Readable text, then a content stream of ``inflated_mb`` MB of blanks (about 1 KB per MB packed)."""
    blank = b"\n" * (1 << 20)
    packer = zlib.compressobj(9)
    packed = b"".join(packer.compress(blank) for _ in range(inflated_mb)) + packer.flush()
    text = zlib.compress(text_stream(normal_lines()), 9)
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [6 0 R] /Count 1 >>",
        FONT,
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(text) + text + b"\nendstream",
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(packed) + packed + b"\nendstream",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >>"
        b" /Contents [4 0 R 5 0 R] >>",
    ]
    return _write(path, objects, b"")


def page_cycle(path: Path) -> Path:
    """Two good pages and a page-tree node listing itself among its kids (a cycle): /Count says 3."""
    objects: list[bytes] = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [5 0 R 8 0 R] /Count 3 >>",
        FONT,
    ]
    for number in (1, 2):  # objects 4-5 and 6-7: a content stream and its page
        packed = zlib.compress(text_stream([b"Page %d: " % number + WORDS] + normal_lines(10)), 9)
        objects.append(b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(packed) + packed + b"\nendstream")
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >>"
            b" /Contents %d 0 R >>" % len(objects)
        )
    objects.append(b"<< /Type /Pages /Parent 2 0 R /Kids [8 0 R 7 0 R] /Count 2 >>")
    return _write(path, objects, b"")


def trailing_junk(path: Path, junk_bytes: int = 20_000, seed: Optional[bytes] = None) -> Path:
    """A good PDF followed by bytes that are not PDF (as some mail gateways and uploaders append)."""
    junk = (seed or os.urandom(32)) * (junk_bytes // 32 + 1)
    return write_pdf(
        path, [((612, 792), [text_stream(normal_lines())])], tail=junk[:junk_bytes].replace(b"%%EOF", b"xxxxx")
    )


def long_text_object(path: Path, chars: int = 40_000) -> tuple[Path, bytes]:
    """One text-showing string of ``chars`` characters (pdfium keeps only the first 32,767); returns the
    file and the string's last word, which a silent cut loses."""
    body = (WORDS * (chars // len(WORDS) + 1))[: chars - 12] + b" endmarkerzz"
    stream = b"BT /F1 1 Tf 10 400 Td (" + body + b") Tj ET"
    return write_pdf(path, [((612, 792), [text_stream(normal_lines(5)), stream])]), b"endmarkerzz"


def scanned_poster(path: Path, mm: float = 1900) -> Path:
    """A square page ``mm`` wide (under ingest.max_page_mm) that is one 2x2-pixel scan: it is OCR'd, and
    rendering it at the OCR resolution would take ~0.5 GB of pixels."""
    side = mm / 25.4 * 72
    image = b"\xff\x00\x00\xff"
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [5 0 R] /Count 1 >>",
        b"<< /Type /XObject /Subtype /Image /Width 2 /Height 2 /ColorSpace /DeviceGray /BitsPerComponent 8"
        b" /Length %d >>\nstream\n" % len(image) + image + b"\nendstream",
    ]
    content = b"q %g 0 0 %g 0 0 cm /Im1 Do Q" % (side, side)
    objects.append(b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream")
    objects.append(
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %g %g] /Resources << /XObject << /Im1 3 0 R >> >>"
        b" /Contents 4 0 R >>" % (side, side)
    )
    return _write(path, objects, b"")
