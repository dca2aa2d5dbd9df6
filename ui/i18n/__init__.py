"""The one owner of the UI's language: English and Chinese strings (strings), and the backend's messages
in the user's language (messages)."""
