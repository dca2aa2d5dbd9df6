"""Text and figure extraction on the failure modes of real papers, reproduced in small generated PDFs."""

from __future__ import annotations

import logging

from backend.documents.pdf import parse_pdf
from tests.backend.documents.layout_fixtures import (
    DEJAVU_MATH,
    DEJAVU_MONO,
    fix_astral_to_unicode,
    write_bleeding_figures_pdf,
    write_lines_pdf,
    write_offset_mediabox_pdf,
)


def _share(image, colour) -> float:
    pixels = list(image.convert("RGB").resize((40, 40)).getdata())
    return sum(1 for p in pixels if max(abs(a - b) for a, b in zip(p, colour)) < 40) / len(pixels)


def test_figures_bleeding_past_the_crop_box_are_clamped_or_skipped(tmp_path, settings, caplog):
    # arXiv 1506.05865, 2312.07556: "ValueError: Crop exceeds page dimensions" cost the whole document
    path = write_bleeding_figures_pdf(tmp_path / "bleed.pdf")
    with caplog.at_level(logging.DEBUG):
        page = parse_pdf(path, settings)[0]
    assert "bleed past the visible page box" in page.text
    colours = sorted(
        (round(_share(f.image, (255, 0, 0)), 1), round(_share(f.image, (0, 0, 255)), 1)) for f in page.figures
    )
    assert colours == [(0.0, 1.0), (1.0, 0.0)]  # the red one cut at the CropBox, the blue one whole
    red = next(f for f in page.figures if _share(f.image, (255, 0, 0)) > 0.9)
    assert red.box[2] <= 576 + 0.5  # clamped to the CropBox


def test_figure_on_a_page_with_an_offset_media_box_is_rendered_from_its_own_area(tmp_path, settings):
    path = write_offset_mediabox_pdf(tmp_path / "offset.pdf")
    page = parse_pdf(path, settings)[0]
    assert "does not start at the origin" in page.text
    assert len(page.figures) == 1
    assert _share(page.figures[0].image, (255, 0, 0)) > 0.95


def test_math_letters_in_surrogate_pairs_read_as_plain_letters(tmp_path, settings):
    # arXiv 2101.08595, 2203.01849, 2305.16335: pdfium hands out UTF-16 halves; lone surrogates broke the
    # tokenizer. 𝜎 (U+1D70E) reads as σ, 𝑬 as E.
    path = fix_astral_to_unicode(write_lines_pdf(tmp_path / "math.pdf", ["with 𝜎 and 𝑬 here"], DEJAVU_MATH))
    text = parse_pdf(path, settings)[0].text
    assert text == "with σ and E here"
    text.encode("utf-8")  # no lone surrogate left


def test_wrapped_lines_are_joined_with_a_space_and_hyphens_removed(tmp_path, settings):
    # arXiv 1609.09000 read "encodingthe presence"; a monospaced font makes every full line end at the margin
    lines = [
        "For each graph its feature vector has binary",
        "entries encoding the presence of the sub-",
        "structure graph and each line ends in encod-",
        "ing and then this paragraph ends.",
    ]
    path = write_lines_pdf(tmp_path / "wrap.pdf", lines, DEJAVU_MONO)
    text = parse_pdf(path, settings)[0].text
    assert text == (
        "For each graph its feature vector has binary entries encoding the presence of the "
        "substructure graph and each line ends in encoding and then this paragraph ends."
    )


def test_preview_frames_the_text_on_a_page_whose_media_box_is_offset(tmp_path):
    from PIL import Image

    from backend.documents.preview import FRAME_COLOUR, PREVIEW_SCALE, render_page

    path = write_offset_mediabox_pdf(tmp_path / "offset.pdf")
    image = Image.open(render_page(path, 1, "does not start at the origin", tmp_path / "previews")).convert("RGB")
    framed = [
        (x, y)
        for y in range(image.height)
        for x in range(0, image.width, 2)
        if max(abs(a - b) for a, b in zip(image.getpixel((x, y)), FRAME_COLOUR)) < 30
    ]
    assert framed
    top = min(y for _, y in framed) / PREVIEW_SCALE
    left = min(x for x, _ in framed) / PREVIEW_SCALE
    assert 75 <= top <= 95 and 190 <= left <= 215  # "does" sits ~200 pt from the left, ~90 pt from the top
