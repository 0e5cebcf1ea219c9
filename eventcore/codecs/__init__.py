"""Codecs: events to and from their stored forms.

``userlog`` (text, JSON and XML user-log formats) lives in the ``userlog_*``
modules; ``eventcore.codecs.userlog`` is the entry point.
"""
