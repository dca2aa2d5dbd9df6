"""The Settings tab: its layout (page) and its handlers."""
