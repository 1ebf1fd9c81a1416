"""Screens pushed over the server view."""
