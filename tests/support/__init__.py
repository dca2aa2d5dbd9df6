"""Test helpers shared by the backend, UI and browser tests."""
