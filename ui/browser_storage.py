"""Values a browser keeps across reloads (its current knowledge base, its id), in its local storage.

Not ``gr.BrowserState``: that one reads its value when its own script has loaded, which on a loaded machine
came after the page's load event had already sent its default; the load then fell back to the first
knowledge base and stored that over the browser's own pick. Here the load event reads the storage itself,
before it is sent (``restore_js``), and each value is written back whenever it changes.
"""

from __future__ import annotations

import json
from typing import Sequence

import gradio as gr

from ui.common import UNDOCUMENTED

CURRENT_KB_KEY = "doclens-current-kb"
BROWSER_ID_KEY = "doclens-browser"


def stored_value(key: str, elem_id: str) -> gr.Textbox:
    """A hidden value kept under ``key`` in this browser's local storage whenever it changes."""
    box = gr.Textbox(None, visible=False, elem_id=elem_id)
    save = f"(value) => {{ try {{ localStorage.setItem({json.dumps(key)}, JSON.stringify(value ?? null)); }} catch (e) {{}} }}"
    box.change(None, box, None, js=save, queue=False, api_name=f"{elem_id.replace('-', '_')}_kept", **UNDOCUMENTED)
    return box


def restore_js(first: str, keys: Sequence[str], made: Sequence[str] = ()) -> str:
    """A load event's js: ``first`` (an async js function: the first input's value), then the value stored
    under each of ``keys`` (null when none), as the event's inputs. A key in ``made`` that holds nothing
    gets a new random id, stored before the event is sent: made by the server on a first upload, the id
    was stored by an event after the upload's, which a reload right after it could come before."""
    reads = ", ".join(f"{'make' if key in made else 'read'}({json.dumps(key)})" for key in keys)
    return f"""
async (...inputs) => {{
  const read = (key) => {{ try {{ return JSON.parse(localStorage.getItem(key)); }} catch (e) {{ return null; }} }};
  const make = (key) => {{
    const kept = read(key);
    if (kept) return kept;
    const bytes = crypto.getRandomValues(new Uint8Array(16));  // also where randomUUID is not (plain http)
    const id = Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
    try {{ localStorage.setItem(key, JSON.stringify(id)); }} catch (e) {{}}
    return id;
  }};
  const first = await ({first.strip()})();
  return [first, {reads}];
}}
"""
