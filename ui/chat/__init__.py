"""The Chat tab: its layout (page), its handlers, and the panels beside the answer (sources, scores)."""
