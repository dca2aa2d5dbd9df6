"""Bad inputs for the PDF checks, written by hand so that no extra package is needed."""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

from backend.quality.hostile_pdfs import write_objects

_PAD = bytes.fromhex("28BF4E5E4E758A4164004E56FFFA01082E2E00B6D0683E802F0CA9FE6453697A")


def _rc4(key: bytes, data: bytes) -> bytes:
    box = list(range(256))
    j = 0
    for i in range(256):
        j = (j + box[i] + key[i % len(key)]) % 256
        box[i], box[j] = box[j], box[i]
    out, i, j = bytearray(), 0, 0
    for byte in data:
        i = (i + 1) % 256
        j = (j + box[i]) % 256
        box[i], box[j] = box[j], box[i]
        out.append(byte ^ box[(box[i] + box[j]) % 256])
    return bytes(out)


def write_encrypted_pdf(path: Path, user_password: bytes = b"secret", owner_password: bytes = b"owner") -> Path:
    """A one-page PDF under the standard security handler (RC4 40-bit, revision 2) that needs a password."""
    file_id = hashlib.md5(b"doclens-test").digest()
    permissions = -4
    owner_key = hashlib.md5((owner_password + _PAD)[:32]).digest()[:5]
    o_value = _rc4(owner_key, (user_password + _PAD)[:32])
    key = hashlib.md5(
        (user_password + _PAD)[:32] + o_value + permissions.to_bytes(4, "little", signed=True) + file_id
    ).digest()[:5]
    u_value = _rc4(key, _PAD)
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] >>",
        b"<< /Filter /Standard /V 1 /R 2 /O <"
        + o_value.hex().encode()
        + b"> /U <"
        + u_value.hex().encode()
        + b"> /P "
        + str(permissions).encode()
        + b" >>",
    ]
    trailer = b"/Encrypt 4 0 R /ID [<%s> <%s>]" % (file_id.hex().encode(), file_id.hex().encode())
    return write_objects(path, objects, trailer=trailer, version=b"1.4")


def write_bad_inputs(folder: Path, good_pdf: Path) -> dict[str, Path]:
    """Each kind of file the ingestion must refuse, named after the reason."""
    folder.mkdir(parents=True, exist_ok=True)
    files = {
        "empty": folder / "empty.pdf",
        "text": folder / "notes.pdf",
        "png": folder / "picture.pdf",
        "docx": folder / "report.pdf",
        "truncated": folder / "truncated.pdf",
        "encrypted": folder / "locked.pdf",
    }
    files["empty"].write_bytes(b"")
    files["text"].write_text("just some notes, not a PDF\n", encoding="utf-8")
    files["png"].write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 64)
    with zipfile.ZipFile(files["docx"], "w") as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr("word/document.xml", "<document/>")
    data = good_pdf.read_bytes()
    files["truncated"].write_bytes(data[: len(data) // 2])
    write_encrypted_pdf(files["encrypted"])
    return files


MATH_FONT = Path("/usr/share/fonts/truetype/dejavu/DejaVuMathTeXGyre.ttf")


def write_math_italic_pdf(path: Path, text: str) -> Path:
    """One line of ``text`` that may hold characters outside the BMP (math italic 𝜇, 𝜎), as papers set
    them: pdfium reads each such character as two UTF-16 code units.

    reportlab writes such a character's ToUnicode entry as five hex digits; a CMap wants UTF-16BE
    (``<D835DF07>``), so the entries are rewritten and the stream lengths and the xref table follow."""
    import re

    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.ttfonts import TTFont
    from reportlab.pdfgen import canvas

    pdfmetrics.registerFont(TTFont("DocLensMath", str(MATH_FONT)))
    page = canvas.Canvas(str(path), pageCompression=0)
    page.setFont("DocLensMath", 11)
    page.drawString(72, 720, text)
    page.save()

    def utf16(match: re.Match) -> bytes:
        return b"<" + chr(int(match.group(1), 16)).encode("utf-16-be").hex().upper().encode() + b">"

    def fix_stream(match: re.Match) -> bytes:
        body = re.sub(rb"<([0-9A-F]{5,6})>", utf16, match.group(2))
        head = match.group(1).replace(b"/Length %d" % len(match.group(2)), b"/Length %d" % len(body))
        return head + b"stream\n" + body + b"endstream"

    data = re.sub(rb"(<<[^>]*?/Length \d+[^>]*>>\s*)stream\n(.*?)endstream", fix_stream, path.read_bytes(), flags=re.S)
    path.write_bytes(_with_fresh_xref(data))
    return path


def _with_fresh_xref(data: bytes) -> bytes:
    """The same PDF with its xref table (and startxref) pointing at where the objects now are."""
    import re

    body = data[: data.rindex(b"\nxref\n") + 1]
    offsets = {int(m.group(1)): m.start(1) for m in re.finditer(rb"(?m)^(\d+) 0 obj", body)}
    count = max(offsets) + 1
    table = [b"xref\n0 %d\n" % count, b"0000000000 65535 f \n"]
    table += [b"%010d 00000 n \n" % offsets.get(number, 0) for number in range(1, count)]
    trailer = data[data.index(b"trailer", len(body)) : data.index(b"startxref", len(body))]
    return body + b"".join(table) + trailer + b"startxref\n%d\n%%%%EOF\n" % len(body)
