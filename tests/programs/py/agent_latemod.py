"""Imported late by agent_lateimport.py: a Python breakpoint set before the import must hit."""


def late(n):
    m = n * 2  # MARK:late_body
    return m
