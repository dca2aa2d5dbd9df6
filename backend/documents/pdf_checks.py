"""Checks made on a PDF before any parsing (size, signature, end marker, streams, page sizes and count),
and opening it with a message that names the file and the reason."""

from __future__ import annotations

import logging
import mmap
import os
from pathlib import Path

import pypdfium2 as pdfium

from backend.documents.limits import check_page_sizes, check_streams
from backend.documents.pdfium_lock import PDFIUM_LOCK
from backend.errors import DocumentError
from backend.settings import Settings
from backend.stage_times import stage

log = logging.getLogger(__name__)

_EOF_WINDOW = 8192


@stage("open_parse")
def inspect_pdf(path: os.PathLike | str, settings: Settings) -> int:
    """Check the file before any work and return its page count; DocumentError names the file and why."""
    path = Path(path)
    name = path.name
    size = _file_size(path)
    limit_mb = settings.ingest.max_file_mb
    if size > limit_mb * 1024 * 1024:
        raise DocumentError(f"{name}: {size / 1024 / 1024:.1f} MB is over the {limit_mb:g} MB limit")
    with path.open("rb") as handle:
        head = handle.read(1024)
        handle.seek(max(0, size - _EOF_WINDOW))
        tail = handle.read()
    if b"%PDF-" not in head:
        raise DocumentError(f"{name}: not a PDF ({_guess_kind(head)})")
    if b"%%EOF" not in tail and not _has_eof_marker(path):
        raise DocumentError(f"{name}: the PDF is truncated or corrupt (no end-of-file marker)")
    check_streams(path, name, settings.ingest)
    with PDFIUM_LOCK:
        pdf = open_pdf(path)
        try:
            pages = len(pdf)
            check_page_sizes(pdf, name, settings.ingest)
        finally:
            pdf.close()
    if pages == 0:
        raise DocumentError(f"{name}: the PDF has no pages")
    if pages > settings.ingest.max_pages:
        raise DocumentError(f"{name}: {pages} pages is over the limit of {settings.ingest.max_pages} pages")
    return pages


def _has_eof_marker(path: Path) -> bool:
    """Bytes after the last ``%%EOF`` (appended by some mailers and uploaders) do not make a PDF corrupt:
    pdfium reads it, so look for the marker in the whole file, not only its end."""
    with path.open("rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
        found, size = data.rfind(b"%%EOF"), len(data)
    if found >= 0:
        log.warning("%s: %d bytes after the end-of-file marker are ignored", path.name, size - found - 5)
    return found >= 0


def _file_size(path: Path) -> int:
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise DocumentError(f"{path.name}: cannot be read ({exc.strerror or exc})") from None
    if not path.is_file():
        raise DocumentError(f"{path.name}: not a file")
    if size == 0:
        raise DocumentError(f"{path.name}: the file is empty (0 bytes)")
    return size


_MAGIC = (
    (b"\x89PNG", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF8", "a GIF image"),
    (b"PK\x03\x04", "a ZIP archive, e.g. a Word or Excel file"),
    (b"\xd0\xcf\x11\xe0", "an old Office file"),
    (b"{\\rtf", "an RTF document"),
    (b"II*\x00", "a TIFF image"),
    (b"MM\x00*", "a TIFF image"),
)


def _guess_kind(head: bytes) -> str:
    for magic, kind in _MAGIC:
        if head.startswith(magic):
            return f"it is {kind}"
    try:
        head.decode("utf-8")
    except UnicodeDecodeError:
        return "unknown binary content"
    return "it looks like plain text"


def open_pdf(path: Path) -> pdfium.PdfDocument:
    try:
        return pdfium.PdfDocument(str(path))
    except pdfium.PdfiumError as exc:
        message = str(exc).lower()
        if "password" in message:
            raise DocumentError(f"{path.name}: the PDF is password-protected") from None
        raise DocumentError(f"{path.name}: the PDF is corrupt or unreadable ({exc})") from None
