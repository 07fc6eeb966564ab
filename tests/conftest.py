"""Fixtures shared by the tests (the browser test's own are in test_browser.py)."""
