"""One lock for every pdfium call in the process.

pdfium may not be called from two threads at once, not even for different documents: that crashes or
corrupts the process (pypdfium2's documentation). Uploads parse on the ingest and read-ahead threads while
the UI renders page previews on its own threads, so each use holds this lock, one page at a time.
"""

from __future__ import annotations

import threading

PDFIUM_LOCK = threading.RLock()
