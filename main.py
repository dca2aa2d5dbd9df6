"""DocLens entry point: ``python main.py [serve|kb|ingest|sync|docs|rm|figures|search|ask|summary|eval|selftest] --help``."""

import os
import sys

# Keep third-party libraries quiet and local before they are imported.
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from backend.cpu import limit_malloc_arenas  # noqa: E402

limit_malloc_arenas()  # before any worker thread starts

from ui.cli.commands import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
