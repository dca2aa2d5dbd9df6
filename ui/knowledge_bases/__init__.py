"""The Knowledge base tab: its layout (page), its handlers, the views of documents and uploads, and
the upload jobs that outlive a page load."""
