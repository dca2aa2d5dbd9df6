"""OCR lines put in reading order as text (backend/documents/ocr/page_text.py): rows, paragraphs, and the
paragraphs that read as display equations handed to a mark."""

from __future__ import annotations

from backend.documents.ocr import OCRBox, boxes_to_text


def test_boxes_become_rows_and_paragraphs():
    boxes = [
        OCRBox("World", 120, 10, 200, 30),
        OCRBox("Hello", 10, 12, 100, 31),
        OCRBox("你好", 10, 40, 60, 60),
        OCRBox("世界", 70, 41, 120, 60),
        OCRBox("Next paragraph", 10, 110, 200, 130),
    ]
    assert boxes_to_text(boxes) == "Hello World\n你好世界\n\nNext paragraph"


def test_a_paragraph_that_reads_as_an_equation_is_marked_with_its_box_in_pixels():
    """Issue 29 item 2: OCR garbles a scanned formula; its paragraph goes to ``mark`` with its box, so the
    parser can cut the formula's image out of the page (equations.ScannedFormulas)."""
    boxes = [
        OCRBox("The relation below is used throughout the model.", 10, 10, 400, 30),
        OCRBox("H=", 150, 90, 180, 110),
        OCRBox("p2/2m 1/2mω²x2", 182, 80, 300, 115),
        OCRBox("(3)", 380, 92, 400, 108),
        OCRBox("Here each symbol has its usual meaning.", 10, 190, 400, 210),
    ]
    seen = []

    def mark(text, box):
        seen.append((text, box))
        return "<formula>"

    text = boxes_to_text(boxes, mark=mark)
    assert (
        text
        == "The relation below is used throughout the model.\n\n<formula>\n\nHere each symbol has its usual meaning."
    )
    assert seen == [("H=p2/2m 1/2mω²x2 (3)", (150, 80, 400, 115))]
    assert boxes_to_text(boxes) == text.replace("<formula>", "H=p2/2m 1/2mω²x2 (3)"), "no mark: unchanged"


def test_a_display_fraction_with_words_is_marked_too():
    """Issue 29 item 2: a scanned "CAGR = (Ending Value / Beginning Value)^(1/n) - 1" holds words, so the
    text test took its garbled OCR for prose and presented it as the formula. OCR's detector boxes the
    fraction as one line twice as tall as the prose around it: that marks it."""
    boxes = [
        OCRBox("Section 2. The relation below is used throughout the model.", 194, 274, 1134, 316),
        OCRBox("CAGR=(Ending Value/Beginning Value-)1/n-1", 530, 402, 1118, 510),
        OCRBox("Here each symbol has its usual meaning.", 191, 578, 838, 624),
    ]
    text = boxes_to_text(boxes, mark=lambda text, box: f"<formula {text}>")
    assert "\n\n<formula CAGR=(Ending Value/Beginning Value-)1/n-1>\n\n" in text


def test_prose_with_a_relation_sign_is_not_taken_for_a_fraction():
    """The height test needs the tall line itself: prose lines of the usual height with "=" stay prose."""
    boxes = [
        OCRBox("We set the learning rate = 0.01 and the batch size", 10, 10, 800, 52),
        OCRBox("to 32 for all the models in the table below.", 10, 60, 700, 102),
        OCRBox("Here each symbol has its usual meaning.", 10, 160, 800, 202),
    ]
    assert "<formula" not in boxes_to_text(boxes, mark=lambda text, box: f"<formula {text}>")
