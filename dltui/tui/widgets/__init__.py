"""Widgets of the server view: a column per server, a panel per host and per GPU."""
